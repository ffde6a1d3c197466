"""Throughput of ``classify predict`` on the IMDB test reviews, against the classifier alone.

Writes the test reviews one per line to a temporary file (line breaks inside a review become
spaces) and runs ``classify predict --per-line --format csv`` on it as a real subprocess, as a
user would: wall time, reviews per second, CPU seconds (user + system: the work done,
whatever else runs on the machine), the time from process start to the first result line
(the CSV header comes before any prediction, so it does not count) and the peak RSS. A run
on one review measures what every run pays before its first review (start-up, model
load, tracing); the difference of the two runs gives the reviews per second after start-up.

The floor runs in this process: ``model.predict`` of the classifier sub-model on token ids
vectorized beforehand and padded to ``sequence_length`` (what the end-to-end model computes),
leaving out reading, vectorizing and printing. Its probabilities are the reference for the
command's (the last column; the CSV rounds to 6 decimals). Every figure is the median of
``--repeats`` runs. The default model is the newest registered ``imdb-sentiment``, pinned to
its version for the whole benchmark.

A second table sets start-up costs side by side, each a fresh process timed from start to its
answer (its first line of output) and to its exit: a bare ``import tensorflow``, ``classify
predict`` of one review with ``--model`` pointing at a local ``.keras`` file (today's path: no
registry lookup, still TensorFlow, Keras and MLflow), and the TensorFlow-free path, a
``python -c`` that loads the model's LiteRT bundle (:mod:`classifier.fast_predict`, written
here by :func:`classifier.bundle.write_bundle`) and predicts the same review; ratios are
against the bare import. A third compares the rate after start-up, in this process, of
``predict_texts`` on the Keras model and of the bundle on the same reviews (both sorted by
length, ``--batch-size`` per batch), with the largest difference of their probabilities.

Usage:
    TFDS_DATA_DIR=../shared/tensorflow_datasets python benchmarks/predict_throughput.py
    python benchmarks/predict_throughput.py --quick       # 2,000 reviews, one run
    python benchmarks/predict_throughput.py --model models:/imdb-sentiment/9 --repeats 5
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from classifier.bundle import write_bundle  # noqa: E402
from classifier.config import DataConfig  # noqa: E402
from classifier.errors import DataNotFoundError, ModelError  # noqa: E402
from classifier.fast_predict import MODEL_FILE, VOCABULARY_FILE, load_bundle  # noqa: E402
from classifier.imdb_source import split_specs, tfds_load  # noqa: E402
from classifier.keras_predict import vectorizer_of  # noqa: E402
from classifier.predict import DEFAULT_BATCH_SIZE, predict_texts  # noqa: E402
from classifier.registry import DEFAULT_MODEL_NAME, load_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TEST_REVIEWS = 25_000
QUICK_REVIEWS = 2_000
VECTORIZE_BATCH = 1024


class BenchmarkError(RuntimeError):
    """A run that did not give what was expected (exit status, rows, order)."""


@dataclass(frozen=True)
class Run:
    """One ``classify predict`` subprocess: seconds, peak RSS and the probabilities it printed."""

    wall: float
    cpu: float
    first_result: float
    peak_rss: int
    probabilities: np.ndarray


def default_data_dir() -> str | None:
    """``$TFDS_DATA_DIR``, else the prepared copy beside the checkout (as the Makefile)."""
    if os.environ.get("TFDS_DATA_DIR"):
        return os.environ["TFDS_DATA_DIR"]
    shared = ROOT.parent / "shared" / "tensorflow_datasets"
    return str(shared) if shared.is_dir() else None


def pinned_model(spec: str | None) -> str:
    """``spec``, or ``models:/imdb-sentiment/N`` for the newest version registered now."""
    if spec is not None:
        return spec
    from mlflow.tracking import MlflowClient

    from classifier.tracking import configure_tracking

    store = configure_tracking()
    try:
        versions = MlflowClient().search_model_versions(f"name = '{DEFAULT_MODEL_NAME}'")
    except Exception as error:  # noqa: BLE001 - MLflow raises many kinds for a bad store
        raise ModelError(f"cannot read the model registry in {store} ({error})") from None
    if not versions:
        load_model(None)  # raises ModelError saying how to train one
    return f"models:/{DEFAULT_MODEL_NAME}/{max(int(v.version) for v in versions)}"


def write_reviews(data_dir: str | None, count: int, path: Path) -> list[str]:
    """The first ``count`` test reviews, one per line in ``path``, as the command reads them."""
    cfg = DataConfig(data_dir=data_dir, download=False, test_size=count)
    test = tfds_load(split_specs(cfg)["test"], cfg, as_supervised=True)
    with path.open("w", encoding="utf-8", newline="") as out:
        for texts, _ in test.batch(VECTORIZE_BATCH):
            for text in texts.numpy():
                review = text.decode("utf-8").replace("\r", " ").replace("\n", " ")
                out.write(review + "\n")
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def run_cli(model: str, path: Path, reviews: int, batch_size: int) -> Run:
    """``classify predict --per-line --format csv`` on ``path`` as a subprocess, timed."""
    command = [sys.executable, "-m", "classifier", "predict", "--per-line", "--format", "csv"]
    command += ["--batch-size", str(batch_size), "--model", model, str(path)]
    lines: list[bytes] = []
    first_result = None
    with tempfile.TemporaryFile() as stderr:
        started = time.perf_counter()
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, cwd=ROOT)
        for line in child.stdout:
            lines.append(line)
            if first_result is None and len(lines) == 2:  # line 1 is the CSV header
                first_result = time.perf_counter() - started
        child.stdout.close()
        _, status, usage = os.wait4(child.pid, 0)  # this child's own peak RSS
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        stderr.seek(0)
        errors = stderr.read().decode("utf-8", errors="replace").strip().splitlines()
    if child.returncode != 0:
        last = errors[-1] if errors else "no message"
        raise BenchmarkError(f"classify predict exited with {child.returncode}: {last}")
    rows = list(csv.reader(io.StringIO(b"".join(lines[1:]).decode("utf-8"))))
    if [row[0] for row in rows] != [f"{path}:{number}" for number in range(1, reviews + 1)]:
        raise BenchmarkError(f"classify predict printed {len(rows)} rows, not {reviews} in order")
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, else KiB
    return Run(
        wall=wall,
        cpu=usage.ru_utime + usage.ru_stime,
        first_result=first_result if first_result is not None else wall,
        peak_rss=usage.ru_maxrss * scale,
        probabilities=np.array([float(row[2]) for row in rows]),
    )


def floor(model: keras.Model, texts: list[str], batch_size: int, repeats: int):
    """Median wall and CPU seconds of ``model.predict`` of the classifier alone, and its
    probabilities."""
    vectorizer = vectorizer_of(model)
    classifier = next(layer for layer in model.layers if isinstance(layer, keras.Model))
    ids = np.concatenate(
        [
            vectorizer(tf.constant(texts[start : start + VECTORIZE_BATCH])).numpy()
            for start in range(0, len(texts), VECTORIZE_BATCH)
        ]
    )
    classifier.predict(ids[:batch_size], batch_size=batch_size, verbose=0)  # trace once
    wall, cpu = [], []
    for _ in range(repeats):
        started, used = time.perf_counter(), time.process_time()
        probabilities = classifier.predict(ids, batch_size=batch_size, verbose=0)[:, 1]
        wall.append(time.perf_counter() - started)
        cpu.append(time.process_time() - used)
    return statistics.median(wall), statistics.median(cpu), probabilities.astype(np.float64)


#: The TensorFlow-free path in a fresh process: load a bundle, classify one review file.
FAST_ONE = (
    "import sys\n"
    "from classifier.fast_predict import load_bundle\n"
    "text = open(sys.argv[2], encoding='utf-8').read()\n"
    "print(load_bundle(sys.argv[1]).predict_texts([text])[0], flush=True)\n"
)


@dataclass(frozen=True)
class Start:
    """One fresh process: seconds to its first line of output (its answer) and to its exit."""

    answer: float
    wall: float
    output: str


def fresh_process(command: list[str]) -> Start:
    """Run ``command`` from the checkout and time it (the answer is the exit when it prints
    nothing)."""
    with tempfile.TemporaryFile() as stderr:
        started = time.perf_counter()
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, cwd=ROOT)
        first = child.stdout.readline()
        answered = time.perf_counter() - started
        rest = child.stdout.read()
        child.stdout.close()
        child.wait()
        wall = time.perf_counter() - started
        stderr.seek(0)
        errors = stderr.read().decode("utf-8", errors="replace").strip().splitlines()
    if child.returncode != 0:
        last = errors[-1] if errors else "no message"
        raise BenchmarkError(f"{' '.join(command[:3])} exited with {child.returncode}: {last}")
    return Start(answered if first else wall, wall, (first + rest).decode("utf-8"))


def rates(predictors: dict, texts: list[str], repeats: int) -> dict:
    """Median wall and CPU seconds of each ``predict(texts)`` in this process, after one warm-up
    call each (tracing, first allocations), interleaved; and the probabilities."""
    for predict in predictors.values():
        predict(texts[: min(len(texts), 256)])
    times: dict = {name: ([], []) for name in predictors}
    probabilities = {}
    for _ in range(repeats):
        for name, predict in predictors.items():
            started, used = time.perf_counter(), time.process_time()
            probabilities[name] = np.array(predict(texts), dtype=np.float64)
            times[name][0].append(time.perf_counter() - started)
            times[name][1].append(time.process_time() - used)
    return {
        name: (statistics.median(wall), statistics.median(cpu), probabilities[name])
        for name, (wall, cpu) in times.items()
    }


def local_keras_file(spec: str, model: keras.Model, workdir: Path) -> Path:
    """``spec`` when it is a ``.keras`` file, else the loaded model saved as one."""
    path = Path(spec).expanduser()
    if path.is_file() and path.suffix == ".keras":
        return path
    model.save(workdir / "model.keras")
    return workdir / "model.keras"


def benchmark(args: argparse.Namespace) -> None:
    count = args.reviews or (QUICK_REVIEWS if args.quick else TEST_REVIEWS)
    repeats = args.repeats or (1 if args.quick else 3)
    load = os.getloadavg()[0]
    spec = pinned_model(args.model)
    model = load_model(spec)
    with tempfile.TemporaryDirectory(prefix="predict-throughput-") as workdir:
        path = Path(workdir) / "reviews.txt"
        texts = write_reviews(args.data_dir, count, path)
        if len(texts) != count:
            raise BenchmarkError(f"the test split has {len(texts)} reviews, not {count}")
        one = Path(workdir) / "one.txt"
        one.write_text(texts[0] + "\n", encoding="utf-8")
        keras_file = local_keras_file(spec, model, Path(workdir))
        started = time.perf_counter()
        bundle_dir = write_bundle(model, Path(workdir) / "bundle")
        exported = time.perf_counter() - started
        sizes = {name: (bundle_dir / name).stat().st_size for name in (MODEL_FILE, VOCABULARY_FILE)}
        single, full, local, fast, bare = [], [], [], [], []
        for _ in range(repeats):  # interleaved, so that a change of load hits every row
            single.append(run_cli(spec, one, 1, args.batch_size))
            full.append(run_cli(spec, path, count, args.batch_size))
            bare.append(fresh_process([sys.executable, "-c", "import tensorflow"]))
            local.append(run_cli(str(keras_file), one, 1, args.batch_size))
            fast.append(fresh_process([sys.executable, "-c", FAST_ONE, str(bundle_dir), str(one)]))
        floor_wall, floor_cpu, reference = floor(model, texts, args.batch_size, repeats)
        bundle = load_bundle(bundle_dir)
        after_start = rates(
            {
                "keras": lambda batch: predict_texts(model, batch, args.batch_size),
                "bundle": lambda batch: bundle.predict_texts(batch, args.batch_size),
            },
            texts,
            repeats,
        )

    def median(runs: list[Run], field: str) -> float:
        return statistics.median(getattr(run, field) for run in runs)

    wall_1, wall_n = median(single, "wall"), median(full, "wall")
    cpu_1, cpu_n = median(single, "cpu"), median(full, "cpu")
    difference = max(float(np.max(np.abs(run.probabilities - reference))) for run in full)
    gb = 1024**3
    print(
        f"### classify predict, {count:,} IMDB test reviews ({spec}; median of {repeats}; "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"load average {load:.1f} at start, TF {tf.__version__})\n"
    )
    print(
        "| what | reviews | wall (s) | reviews/s | CPU (s) | first result (s) | peak RSS (GB) "
        "| max abs diff vs floor |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    print(
        f"| `classify predict`, 1 review (start-up, model load, tracing) | 1 | {wall_1:.1f} | - "
        f"| {cpu_1:.1f} | {median(single, 'first_result'):.1f} "
        f"| {median(single, 'peak_rss') / gb:.2f} | - |"
    )
    print(
        f"| `classify predict --per-line --format csv` | {count:,} | {wall_n:.1f} "
        f"| {count / wall_n:,.0f} | {cpu_n:.1f} | {median(full, 'first_result'):.1f} "
        f"| {median(full, 'peak_rss') / gb:.2f} | {difference:.1e} |"
    )
    if count > 1 and wall_n > wall_1:
        steady = wall_n - wall_1
        print(
            f"| the same after start-up (difference of the two) | {count - 1:,} | {steady:.1f} "
            f"| {(count - 1) / steady:,.0f} | {cpu_n - cpu_1:.1f} | - | - | - |"
        )
    print(
        f"| floor: `model.predict` of the classifier, ids vectorized beforehand (padded to "
        f"{vectorizer_of(model).sequence_length}) | {count:,} | {floor_wall:.1f} "
        f"| {count / floor_wall:,.0f} | {floor_cpu:.1f} | - | - | 0 (reference) |"
    )

    keras_one = predict_texts(model, [texts[0] + "\n"])[0]
    answers = [float(start.output.split()[0]) for start in fast] + [
        run.probabilities[0] for run in local
    ]
    one_difference = max(abs(answer - keras_one) for answer in answers)
    tf_wall = statistics.median(start.wall for start in bare)
    mb = 1e6
    print(
        f"\n### Start-up: one review in a fresh process (median of {repeats}; load average "
        f"{os.getloadavg()[0]:.1f} at the end, {os.cpu_count()} cores shared with other work)\n"
    )
    print("| what | answer (s) | exit (s) | answer / bare `import tensorflow` |")
    print("|---|---:|---:|---:|")
    print(f'| `python -c "import tensorflow"` (nothing else) | - | {tf_wall:.2f} | 1.00x (exit) |')
    rows = [
        (
            "`python -m classifier predict --model model.keras` (a local file: no registry)",
            statistics.median(run.first_result for run in local),
            statistics.median(run.wall for run in local),
        ),
        (
            "TensorFlow-free: `python -c` `load_bundle(...).predict_texts([review])`",
            statistics.median(start.answer for start in fast),
            statistics.median(start.wall for start in fast),
        ),
    ]
    for what, answer, wall in rows:
        print(f"| {what} | {answer:.2f} | {wall:.2f} | {answer / tf_wall:.2f}x |")
    print(
        f"\nBundle: written in {exported:.1f} s (LiteRT export and checks); {MODEL_FILE} "
        f"{sizes[MODEL_FILE] / mb:.2f} MB, {VOCABULARY_FILE} {sizes[VOCABULARY_FILE] / mb:.2f} MB. "
        f"The one review's P(positive) from both commands is the Keras model's within "
        f"{one_difference:.1e} (the CSV rounds to 6 decimals)."
    )
    keras_wall, keras_cpu, keras_probabilities = after_start["keras"]
    print(
        f"\n### After start-up: {count:,} reviews in this process, batches of {args.batch_size} "
        f"sorted by length (median of {repeats})\n"
    )
    print("| what | reviews | wall (s) | reviews/s | CPU (s) | max abs diff vs Keras |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, what in (
        ("keras", "Keras `predict_texts` (ReviewVectorizer + classifier, tf.function)"),
        ("bundle", "bundle `predict_texts` (NumPy tokenizer + LiteRT, one interpreter)"),
    ):
        wall, cpu, probabilities = after_start[name]
        difference = float(np.max(np.abs(probabilities - keras_probabilities)))
        shown = "0 (reference)" if name == "keras" else f"{difference:.1e}"
        print(f"| {what} | {count:,} | {wall:.2f} | {count / wall:,.0f} | {cpu:.2f} | {shown} |")
    bundle_wall = after_start["bundle"][0]
    print(
        f"\nThe bundle runs at {keras_wall / bundle_wall:.2f}x the Keras rate after start-up "
        f"({bundle.resizes:,} interpreter resizes in all)."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model",
        default=None,
        metavar="PATH|URI",
        help="as classify predict --model (default: the newest registered imdb-sentiment)",
    )
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_REVIEWS:,} reviews, 1 run")
    parser.add_argument("--reviews", type=int, default=None, help="test reviews to classify")
    parser.add_argument("--repeats", type=int, default=None, help="runs per row (the median)")
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
    parser.add_argument(
        "--data-dir",
        default=default_data_dir(),
        help="TFDS data dir holding imdb_reviews (default: $TFDS_DATA_DIR, else "
        "../shared/tensorflow_datasets)",
    )
    args = parser.parse_args()
    if args.reviews is not None and not 1 <= args.reviews <= TEST_REVIEWS:
        parser.error(f"--reviews must be between 1 and {TEST_REVIEWS:,}")
    if args.repeats is not None and args.repeats < 1:
        parser.error("--repeats must be at least 1")
    try:
        benchmark(args)
    except (DataNotFoundError, ModelError, BenchmarkError) as error:
        sys.exit(f"predict_throughput: error: {error}")


if __name__ == "__main__":
    main()

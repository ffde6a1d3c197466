"""Throughput and start-up of ``classify predict`` on the IMDB test reviews, by engine.

Writes the test reviews one per line to a temporary file (line breaks inside a review become
spaces) and runs ``classify predict --per-line --format csv`` on it as a real subprocess, as a
user would: wall time, reviews per second, CPU seconds (user + system: the work done,
whatever else runs on the machine), the time from process start to the first result line
(the CSV header comes before any prediction, so it does not count) and the peak RSS (by GNU
``time`` where there is one: a child of this process inherits its peak). The first table has
both engines of the command: the TensorFlow-free fast path (``--model`` the pinned registered
model, which :func:`classifier.serving.model_source.find_bundle` resolves to its run's LiteRT bundle)
and the Keras path (``--model`` a local ``model.keras``). A run on one review measures
what every run pays before its first review (start-up, model load, tracing); the difference of
the one-review and all-reviews runs gives the reviews per second after start-up, set against
the issue's 3,532 reviews/s, measured before the fast path existed.

The floor runs in this process: ``model.predict`` of the classifier sub-model on token ids
vectorized beforehand and padded to ``sequence_length`` (what the end-to-end model computes),
leaving out reading, vectorizing and printing. Its probabilities are the reference for the
command's (the last column; the CSV rounds to 6 decimals). Every figure is the median of
``--repeats`` runs. The default model is the newest registered ``imdb-sentiment``, pinned to
its version for the whole benchmark.

A second table sets start-up costs side by side, each a fresh process classifying one review,
timed from start to its answer (the first result line) and to its exit: a bare ``python -c
"import tensorflow"`` (the reference), ``classify predict --model`` a local bundle folder (written
here by :func:`classifier.serving.bundle.write_bundle`), ``classify predict`` with no ``--model`` (the
default registered model, found in the store) and ``classify predict --model model.keras`` (the
Keras path; the one-review runs of the first table). The issue's targets are on the exit: at
most 0.30x the bare import's for the local bundle, 0.60x for the default model. A third compares
the rate after start-up, in this process, of ``predict_texts`` on the Keras model and of the
bundle on the same reviews (both sorted by length, ``--batch-size`` per batch), with the largest
difference of their probabilities. All subprocesses of a repeat run interleaved, so that a
change of load hits every row.

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
import shutil
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

from classifier.config.schema import DataConfig  # noqa: E402
from classifier.data.imdb import split_specs, tfds_load  # noqa: E402
from classifier.errors import DataNotFoundError, ModelError  # noqa: E402
from classifier.serving.bundle import write_bundle  # noqa: E402
from classifier.serving.keras_engine import vectorizer_of  # noqa: E402
from classifier.serving.litert_engine import MODEL_FILE, VOCABULARY_FILE, load_bundle  # noqa: E402
from classifier.serving.model_source import find_bundle  # noqa: E402
from classifier.serving.predict import DEFAULT_BATCH_SIZE, predict_texts  # noqa: E402
from classifier.serving.registry import DEFAULT_MODEL_NAME, load_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TEST_REVIEWS = 25_000
QUICK_REVIEWS = 2_000
VECTORIZE_BATCH = 1024
#: Reviews per second after start-up of ``classify predict`` on the 25,000 test reviews, as
#: the issue measured it before the fast path (the Keras path, this machine).
ISSUE_RATE = 3_532
#: GNU time, for a child's own peak RSS: Linux keeps ru_maxrss across exec, so a child forked from
#: this process (TensorFlow and the model loaded) reports at least this process's.
GNU_TIME = shutil.which("time") if sys.platform == "linux" else None


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

    from classifier.runs.tracking import configure_tracking

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


def run_cli(model: str | None, path: Path, reviews: int, batch_size: int) -> Run:
    """``classify predict --per-line --format csv`` on ``path`` as a subprocess, timed; with no
    ``--model`` when ``model`` is None (the default registered model)."""
    command = [sys.executable, "-m", "classifier", "predict", "--per-line", "--format", "csv"]
    command += ["--batch-size", str(batch_size), *(["--model", model] if model else []), str(path)]
    lines: list[bytes] = []
    first_result = None
    with tempfile.TemporaryFile() as stderr, tempfile.NamedTemporaryFile("r") as rss:
        command = [GNU_TIME, "-f", "%M", "-o", rss.name, *command] if GNU_TIME else command
        started = time.perf_counter()
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, cwd=ROOT)
        for line in child.stdout:
            lines.append(line)
            if first_result is None and len(lines) == 2:  # line 1 is the CSV header
                first_result = time.perf_counter() - started
        child.stdout.close()
        _, status, usage = os.wait4(child.pid, 0)  # CPU: a grandchild's (under time) included
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        peak_kib = rss.read().split()[-1:]  # GNU time's %M (KiB) ends its output
        stderr.seek(0)
        errors = stderr.read().decode("utf-8", errors="replace").strip().splitlines()
    if child.returncode != 0:
        last = errors[-1] if errors else "no message"
        raise BenchmarkError(f"classify predict exited with {child.returncode}: {last}")
    rows = list(csv.reader(io.StringIO(b"".join(lines[1:]).decode("utf-8"))))
    if [row[0] for row in rows] != [f"{path}:{number}" for number in range(1, reviews + 1)]:
        raise BenchmarkError(f"classify predict printed {len(rows)} rows, not {reviews} in order")
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, else KiB
    peak_rss = int(peak_kib[0]) * 1024 if peak_kib else usage.ru_maxrss * scale
    return Run(
        wall=wall,
        cpu=usage.ru_utime + usage.ru_stime,
        first_result=first_result if first_result is not None else wall,
        peak_rss=peak_rss,
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
    classifier.serving.predict(ids[:batch_size], batch_size=batch_size, verbose=0)  # trace once
    wall, cpu = [], []
    for _ in range(repeats):
        started, used = time.perf_counter(), time.process_time()
        probabilities = classifier.serving.predict(ids, batch_size=batch_size, verbose=0)[:, 1]
        wall.append(time.perf_counter() - started)
        cpu.append(time.process_time() - used)
    return statistics.median(wall), statistics.median(cpu), probabilities.astype(np.float64)


def bare_import() -> float:
    """Seconds a fresh ``python -c "import tensorflow"`` takes to exit (it prints nothing)."""
    command = [sys.executable, "-c", "import tensorflow"]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, cwd=ROOT, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        errors = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
        last = errors[-1] if errors else "no message"
        raise BenchmarkError(f"import tensorflow exited with {done.returncode}: {last}")
    return wall


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
        engines = {"fast": spec, "keras": str(keras_file)}  # --model of each engine's rows
        no_bundle = {  # what classify predict will find, before any run
            model_arg: "" if find_bundle(model_arg) else " (no bundle: Keras path)"
            for model_arg in (spec, None)
        }
        single: dict = {name: [] for name in engines}
        full: dict = {name: [] for name in engines}
        bare, local, default = [], [], []
        for _ in range(repeats):  # interleaved, so that a change of load hits every row
            bare.append(bare_import())
            local.append(run_cli(str(bundle_dir), one, 1, args.batch_size))
            default.append(run_cli(None, one, 1, args.batch_size))
            for name, model_arg in engines.items():
                single[name].append(run_cli(model_arg, one, 1, args.batch_size))
                full[name].append(run_cli(model_arg, path, count, args.batch_size))
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

    gb = 1024**3

    def engine_rows(what: str, ones: list[Run], alls: list[Run]) -> float | None:
        """Print an engine's rows: 1 review, all, after start-up; return the last's rate."""
        wall_1, wall_n = median(ones, "wall"), median(alls, "wall")
        cpu_1, cpu_n = median(ones, "cpu"), median(alls, "cpu")
        difference = max(float(np.max(np.abs(run.probabilities - reference))) for run in alls)
        for reviews, runs, wall, cpu, rate, shown in (
            (1, ones, wall_1, cpu_1, "-", "-"),
            (count, alls, wall_n, cpu_n, f"{count / wall_n:,.0f}", f"{difference:.1e}"),
        ):
            print(
                f"| {what}, {'1 review' if reviews == 1 else 'all reviews'} | {reviews:,} "
                f"| {wall:.2f} | {rate} | {cpu:.2f} | {median(runs, 'first_result'):.2f} "
                f"| {median(runs, 'peak_rss') / gb:.2f} | {shown} |"
            )
        if count == 1 or wall_n <= wall_1:
            return None
        steady = wall_n - wall_1
        print(
            f"| {what}, after start-up (difference) | {count - 1:,} | {steady:.2f} "
            f"| {(count - 1) / steady:,.0f} | {cpu_n - cpu_1:.2f} | - | - | - |"
        )
        return (count - 1) / steady

    print(
        f"### classify predict --per-line --format csv, {count:,} IMDB test reviews ({spec}; "
        f"median of {repeats}; {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, load average {load:.1f} at start, TF {tf.__version__})\n"
    )
    print(
        "| what | reviews | wall (s) | reviews/s | CPU (s) | first result (s) | peak RSS (GB) "
        "| max abs diff vs floor |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    labels = {
        "fast": f"fast path: `--model {spec}`{no_bundle[spec] or ' (its LiteRT bundle)'}",
        "keras": f"Keras path: `--model {keras_file.name}`",
    }
    steady_rates = {
        name: engine_rows(what, single[name], full[name]) for name, what in labels.items()
    }
    print(
        f"| floor: `model.predict` of the classifier, ids vectorized beforehand (padded to "
        f"{vectorizer_of(model).sequence_length}) | {count:,} | {floor_wall:.2f} "
        f"| {count / floor_wall:,.0f} | {floor_cpu:.2f} | - | - | 0 (reference) |"
    )
    fast_rate, keras_rate = steady_rates["fast"], steady_rates["keras"]
    named = {"fast": "the fast path", "keras": "the Keras path"}
    slower = " and ".join(named[name] for name in labels if not steady_rates[name])
    compared = (
        f"the fast path classifies {fast_rate:,.0f} reviews/s, {fast_rate / keras_rate:.2f}x "
        f"the Keras path's {keras_rate:,.0f}"
        if fast_rate and keras_rate
        else f"no rate for {slower} ({'one review' if count == 1 else 'all no slower than one'})"
    )
    print(
        f"\nAfter start-up, through the command, {compared}. The issue's reference, measured "
        f"before the change on the {TEST_REVIEWS:,} reviews: {ISSUE_RATE:,} reviews/s."
    )

    tf_wall = statistics.median(bare)
    print(
        f"\n### Start-up: one review in a fresh process (median of {repeats}; load average "
        f"{os.getloadavg()[0]:.1f} at the end, {os.cpu_count()} cores shared with other work)\n"
    )
    print("| what | answer (s) | exit (s) | exit / bare import | target | met? |")
    print("|---|---:|---:|---:|---:|---|")
    print(f'| `python -c "import tensorflow"` | - | {tf_wall:.2f} | 1.00x (reference) | - | - |')
    for what, runs, target in (
        ("`classify predict --model <local bundle folder>`", local, 0.30),
        (f"`classify predict` (the default registered model){no_bundle[None]}", default, 0.60),
        ("`classify predict --model model.keras` (Keras path)", single["keras"], None),
    ):
        wall = median(runs, "wall")
        met = "-" if target is None else ("yes" if wall / tf_wall <= target else "no")
        print(
            f"| {what} | {median(runs, 'first_result'):.2f} | {wall:.2f} | {wall / tf_wall:.2f}x "
            f"| {'-' if target is None else f'≤ {target:.2f}x'} | {met} |"
        )

    keras_one = predict_texts(model, [texts[0] + "\n"])[0]
    same_model = local + single["fast"] + single["keras"] + (default if args.model is None else [])
    one_difference = max(abs(run.probabilities[0] - keras_one) for run in same_model)
    mb = 1e6
    print(
        f"\nBundle: written in {exported:.1f} s (LiteRT export and checks); {MODEL_FILE} "
        f"{sizes[MODEL_FILE] / mb:.2f} MB, {VOCABULARY_FILE} {sizes[VOCABULARY_FILE] / mb:.2f} MB. "
        f"The one review's P(positive) from every one-review run of this model is the Keras "
        f"model's within {one_difference:.1e} (the CSV rounds to 6 decimals)."
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

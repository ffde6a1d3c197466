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

from classifier.config import DataConfig  # noqa: E402
from classifier.errors import DataNotFoundError, ModelError  # noqa: E402
from classifier.imdb_source import split_specs, tfds_load  # noqa: E402
from classifier.predict import DEFAULT_BATCH_SIZE, vectorizer_of  # noqa: E402
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
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr)
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
        single, full = [], []
        for _ in range(repeats):  # interleaved, so that a change of load hits both
            single.append(run_cli(spec, one, 1, args.batch_size))
            full.append(run_cli(spec, path, count, args.batch_size))
        floor_wall, floor_cpu, reference = floor(model, texts, args.batch_size, repeats)

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

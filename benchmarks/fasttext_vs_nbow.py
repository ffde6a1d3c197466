"""``make train``'s recipe (``nbow``, configs/train.yaml) beside fastText on the same IMDB
reviews, side by side in one run: training time and test accuracy (issue #44's reference).

fastText (``fasttext-wheel`` from PyPI, in this benchmark only, never a dependency of the
package; ``make bench`` installs it) trains supervised on the 25,000 labelled training reviews
with word bigrams for 10 epochs on 2 threads, its other settings its defaults, and is scored on
the 25,000 test reviews. ``nbow`` runs as ``make train`` runs it (``classify train --config
configs/train.yaml``: 15,000 reviews trained, the epoch chosen on 10,000, then refit on all
25,000) into a temporary MLflow store; its training time is the run's ``train_time_s`` (every
epoch, refit included), its wall time that of the whole command (TensorFlow's import, tracing,
evaluation, export and registration included).

Usage:
    TFDS_DATA_DIR=../shared/tensorflow_datasets python benchmarks/fasttext_vs_nbow.py
    python benchmarks/fasttext_vs_nbow.py --quick   # 5,000 reviews, 3 epochs of nbow (minutes)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TFDS' info lines

from machine import cpu_model  # noqa: E402 - after the environment is set

ROOT = Path(__file__).resolve().parents[1]
QUICK_SETS = ["data.train_size=4000", "data.val_size=1000", "data.test_size=5000", "train.epochs=3"]


def reviews(split: str) -> tuple[list[str], list[int]]:
    """The texts and labels of a TFDS ``imdb_reviews`` split (``baseline_sklearn.reviews``,
    after TensorFlow is imported without its start-up lines)."""
    sys.path.insert(0, str(ROOT))
    from classifier.cli.startup import import_tensorflow

    import_tensorflow()
    from baseline_sklearn import reviews as tfds_reviews

    return tfds_reviews(split, os.environ.get("TFDS_DATA_DIR"))


def fasttext_run(train: tuple[list[str], list[int]], test: tuple[list[str], list[int]], workdir):
    """Seconds to train fastText (bigrams, 10 epochs, 2 threads) and its test accuracy."""
    import fasttext

    path = Path(workdir) / "train.txt"
    path.write_text(
        "".join(f"__label__{y} {' '.join(t.split())}\n" for t, y in zip(*train, strict=True))
    )
    started = time.perf_counter()
    model = fasttext.train_supervised(str(path), epoch=10, wordNgrams=2, thread=2, verbose=0)
    seconds = time.perf_counter() - started
    labels, _ = model.predict([" ".join(text.split()) for text in test[0]])
    predicted = [int(label[0].removeprefix("__label__")) for label in labels]
    accuracy = sum(p == y for p, y in zip(predicted, test[1], strict=True)) / len(predicted)
    return seconds, accuracy


def nbow_run(sets: list[str], workdir) -> tuple[float, float, float]:
    """``classify train --config configs/train.yaml``: its wall time, the run's training time
    (``train_time_s``) and its test accuracy."""
    store = f"sqlite:///{Path(workdir) / 'mlflow.db'}"
    command = [sys.executable, "-m", "classifier", "train", "--config", "configs/train.yaml"]
    command += [f"--set={s}" for s in sets]
    started = time.perf_counter()
    done = subprocess.run(
        command, cwd=ROOT, env={**os.environ, "MLFLOW_TRACKING_URI": store}, capture_output=True,
        text=True,
    )  # fmt: skip
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"fasttext_vs_nbow: classify train failed:\n{done.stderr[-2000:]}")
    import mlflow

    mlflow.set_tracking_uri(store)
    (run,) = mlflow.search_runs(search_all_experiments=True, output_format="list")
    return wall, run.data.metrics["train_time_s"], run.data.metrics["test_accuracy"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5,000 reviews, 3 nbow epochs")
    args = parser.parse_args()
    train = reviews("train[:5000]" if args.quick else "train")
    test = reviews("test[:5000]" if args.quick else "test")
    with tempfile.TemporaryDirectory(prefix="fasttext-nbow-") as workdir:
        fast_seconds, fast_accuracy = fasttext_run(train, test, workdir)
        wall, seconds, accuracy = nbow_run(QUICK_SETS if args.quick else [], workdir)
    print(f"## `make train`'s nbow beside fastText ({cpu_model()}, {os.cpu_count()} cores)")
    print()
    print("| model | labelled reviews | training (s) | whole command (s) | test accuracy |")
    print("|---|---:|---:|---:|---:|")
    n, m = f"{len(train[0]):,}", f"{len(test[0]):,}"
    print(f"| fastText, bigrams, 10 epochs | {n} | {fast_seconds:.1f} | | {fast_accuracy:.4f} |")
    print(f"| nbow (`make train`'s recipe) | {n} | {seconds:.1f} | {wall:.1f} | {accuracy:.4f} |")
    print()
    print(f"nbow's training takes {seconds / fast_seconds:.1f}x fastText's ({m} test reviews)")


if __name__ == "__main__":
    main()

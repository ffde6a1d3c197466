"""The classical reference that the ``bow`` variant must match: scikit-learn on the same reviews.

A TF-IDF word 1-2-gram logistic regression (``TfidfVectorizer(ngram_range=(1, 2))``,
scikit-learn's defaults otherwise), its inverse regularisation strength C chosen on the
validation reviews (the first 15,000 reviews of the TFDS train split train it, the next 10,000
score each C, as ``classify train`` splits them), then trained with that C on the 15,000 and on
all 25,000 labelled reviews and evaluated once on the 25,000 test reviews. It prints one
markdown table, with the validation accuracy of every C tried.

Usage:
    TFDS_DATA_DIR=../shared/tensorflow_datasets python benchmarks/baseline_sklearn.py
    python benchmarks/baseline_sklearn.py --quick    # 2,000 training reviews
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from sklearn.feature_extraction.text import TfidfVectorizer  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402

from classifier.config import DataConfig  # noqa: E402
from classifier.imdb_source import tfds_load  # noqa: E402


def reviews(split: str, data_dir: str | None) -> tuple[list[str], list[int]]:
    """The reviews of a TFDS split (``train[:15000]``), as text and labels, in TFDS order."""
    cfg = DataConfig(data_dir=data_dir, download=False)
    texts, labels = [], []
    for text, label in tfds_load(split, cfg, as_supervised=True).as_numpy_iterator():
        texts.append(text.decode("utf-8"))
        labels.append(int(label))
    return texts, labels


def fit(texts: list[str], labels: list[int], c: float):
    """TF-IDF word 1-2-grams and a logistic regression with inverse strength ``c``."""
    vectorizer = TfidfVectorizer(ngram_range=(1, 2))
    classifier = LogisticRegression(C=c, max_iter=2000)
    classifier.fit(vectorizer.fit_transform(texts), labels)
    return vectorizer, classifier


def accuracy(model, texts: list[str], labels: list[int]) -> float:
    vectorizer, classifier = model
    return float(classifier.score(vectorizer.transform(texts), labels))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="2,000 training reviews, 2 values of C"
    )
    parser.add_argument("--data-dir", default=os.environ.get("TFDS_DATA_DIR"))
    args = parser.parse_args()
    train_size = 2_000 if args.quick else 15_000
    grid = (1.0, 30.0) if args.quick else (1.0, 10.0, 30.0, 100.0)
    train = reviews(f"train[:{train_size}]", args.data_dir)
    validation = reviews("train[15000:25000]", args.data_dir)
    test = reviews("test", args.data_dir)
    scores = {c: accuracy(fit(*train, c), *validation) for c in grid}
    best = max(scores, key=scores.get)
    tried = ", ".join(f"C={c:g}: {score:.4f}" for c, score in scores.items())
    print(f"### scikit-learn references on the {len(test[0]):,} IMDB test reviews\n")
    print(
        f"Validation accuracy ({len(validation[0]):,} reviews) per C: {tried}; chosen C={best:g}.\n"
    )
    print("| model | training reviews | test accuracy | fit (s) |")
    print("|---|---:|---:|---:|")
    everything = (train[0] + validation[0], train[1] + validation[1])
    for texts, labels in (train, everything):
        started = time.perf_counter()
        model = fit(texts, labels, best)
        seconds = time.perf_counter() - started
        what = f"TF-IDF 1-2-grams, LogisticRegression(C={best:g})"
        print(f"| {what} | {len(texts):,} | {accuracy(model, *test):.4f} | {seconds:.0f} |")


if __name__ == "__main__":
    main()

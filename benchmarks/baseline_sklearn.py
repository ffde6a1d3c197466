"""The classical reference that the ``bow`` variant must match: scikit-learn on the same reviews.

A TF-IDF word 1-2-gram logistic regression (``TfidfVectorizer(ngram_range=(1, 2))``,
``LogisticRegression(C=1)``, scikit-learn's defaults otherwise) trained on the first 15,000
reviews of the TFDS train split (what ``classify train`` trains on) and on all 25,000, then
evaluated once on the 25,000 test reviews; and the same with ``binary=True`` (what ``bow``
computes). It prints one markdown table, with the seconds each fit took.

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000 training reviews")
    parser.add_argument("--data-dir", default=os.environ.get("TFDS_DATA_DIR"))
    args = parser.parse_args()
    test_texts, test_labels = reviews("test", args.data_dir)
    sizes = (2_000,) if args.quick else (15_000, 25_000)
    print(f"### scikit-learn references on the {len(test_texts):,} IMDB test reviews\n")
    print("| model | training reviews | test accuracy | fit (s) |")
    print("|---|---:|---:|---:|")
    for size in sizes:
        texts, labels = reviews(f"train[:{size}]", args.data_dir)
        for binary in (False, True):
            started = time.perf_counter()
            vectorizer = TfidfVectorizer(ngram_range=(1, 2), binary=binary)
            classifier = LogisticRegression(C=1.0, max_iter=1000)
            classifier.fit(vectorizer.fit_transform(texts), labels)
            seconds = time.perf_counter() - started
            accuracy = classifier.score(vectorizer.transform(test_texts), test_labels)
            what = "TF-IDF 1-2-grams" + (", binary" if binary else "") + ", LogisticRegression(C=1)"
            print(f"| {what} | {size:,} | {accuracy:.4f} | {seconds:.0f} |")


if __name__ == "__main__":
    main()

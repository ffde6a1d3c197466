"""The classical references that the ``bow`` variant must match: scikit-learn on the same reviews.

Three models, each with its inverse regularisation strength C chosen on the validation reviews
(the first 15,000 reviews of the TFDS train split train it, the next 10,000 score each C, as
``classify train`` splits them), then trained with that C on the 15,000 and on all 25,000
labelled reviews and evaluated once on the 25,000 test reviews:

- TF-IDF word 1-2-grams, scikit-learn's defaults, and a logistic regression;
- the same with sublinear tf and min_df 2 (the setting of the issue's 0.899 / 0.906);
- NBSVM-style (Wang & Manning 2012): binary word 1-3-grams scaled by their Naive-Bayes
  log-count ratios, then a logistic regression (the issue's 0.912).

It prints one markdown table, with the validation accuracy of every C tried.

Usage:
    TFDS_DATA_DIR=../shared/tensorflow_datasets python benchmarks/baseline_sklearn.py
    python benchmarks/baseline_sklearn.py --quick    # 2,000 training reviews
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402

from classifier.config.schema import DataConfig  # noqa: E402
from classifier.data.imdb import tfds_load  # noqa: E402


def reviews(split: str, data_dir: str | None) -> tuple[list[str], list[int]]:
    """The reviews of a TFDS split (``train[:15000]``), as text and labels, in TFDS order."""
    cfg = DataConfig(data_dir=data_dir, download=False)
    texts, labels = [], []
    for text, label in tfds_load(split, cfg, as_supervised=True).as_numpy_iterator():
        texts.append(text.decode("utf-8"))
        labels.append(int(label))
    return texts, labels


class NaiveBayesScaled:
    """Binary n-gram counts times the log-count ratio r = log((p / |p|) / (q / |q|)), with
    p and q the smoothed (alpha = 1) feature sums of the positive and negative reviews."""

    def __init__(self, ngram_range: tuple[int, int] = (1, 3)):
        self.counts = CountVectorizer(ngram_range=ngram_range, binary=True)
        self.ratio = None

    def fit_transform(self, texts: list[str], labels: list[int]):
        x = self.counts.fit_transform(texts)
        y = np.asarray(labels)
        p = np.asarray(x[y == 1].sum(axis=0)).ravel() + 1.0
        q = np.asarray(x[y == 0].sum(axis=0)).ravel() + 1.0
        self.ratio = np.log((p / p.sum()) / (q / q.sum()))
        return x.multiply(self.ratio).tocsr()

    def transform(self, texts: list[str]):
        return self.counts.transform(texts).multiply(self.ratio).tocsr()


#: name -> (a new feature extractor, the values of C tried on the validation reviews)
MODELS = {
    "TF-IDF 1-2-grams": (lambda: TfidfVectorizer(ngram_range=(1, 2)), (1.0, 10.0, 30.0, 100.0)),
    "TF-IDF 1-2-grams, sublinear tf, min_df 2": (
        lambda: TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=2),
        (1.0, 8.0, 30.0, 100.0),
    ),
    "NBSVM-style: NB-scaled binary 1-3-grams": (NaiveBayesScaled, (0.1, 0.3, 1.0, 3.0)),
}


def fit(features, texts: list[str], labels: list[int], c: float):
    """The features fitted on ``texts`` and a logistic regression with inverse strength ``c``."""
    extractor = features()
    x = extractor.fit_transform(texts, labels)  # TfidfVectorizer ignores the labels
    classifier = LogisticRegression(C=c, max_iter=2000)
    classifier.fit(x, labels)
    return extractor, classifier


def accuracy(model, texts: list[str], labels: list[int]) -> float:
    extractor, classifier = model
    return float(classifier.score(extractor.transform(texts), labels))


def validation_scores(features, train, validation, grid) -> dict[float, float]:
    """Validation accuracy for each C; the features do not depend on C, so they are computed
    once and only the logistic regression is fitted per C."""
    extractor = features()
    x_train = extractor.fit_transform(*train)
    x_validation = extractor.transform(validation[0])
    return {
        c: float(
            LogisticRegression(C=c, max_iter=2000)
            .fit(x_train, train[1])
            .score(x_validation, validation[1])
        )
        for c in grid
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="2,000 training reviews, 2 values of C each"
    )
    parser.add_argument("--data-dir", default=os.environ.get("TFDS_DATA_DIR"))
    args = parser.parse_args()
    train_size = 2_000 if args.quick else 15_000
    train = reviews(f"train[:{train_size}]", args.data_dir)
    validation = reviews("train[15000:25000]", args.data_dir)
    test = reviews("test", args.data_dir)
    everything = (train[0] + validation[0], train[1] + validation[1])
    print(f"### scikit-learn references on the {len(test[0]):,} IMDB test reviews\n")
    lines, tried = [], []
    for name, (features, grid) in MODELS.items():
        grid = grid[:2] if args.quick else grid
        scores = validation_scores(features, train, validation, grid)
        best = max(scores, key=scores.get)
        listed = ", ".join(f"C={c:g}: {score:.4f}" for c, score in scores.items())
        tried.append(f"- {name}: {listed}; chosen C={best:g}")
        for texts, labels in (train, everything):
            started = time.perf_counter()
            model = fit(features, texts, labels, best)
            seconds = time.perf_counter() - started
            lines.append(
                f"| {name}, LogisticRegression(C={best:g}) | {len(texts):,} | "
                f"{accuracy(model, *test):.4f} | {seconds:.0f} |"
            )
    print(f"Validation accuracy ({len(validation[0]):,} reviews) per C:\n")
    print("\n".join(tried) + "\n")
    print("| model | training reviews | test accuracy | fit (s) |")
    print("|---|---:|---:|---:|")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

"""Does *where* an n-gram sits in a review add to ``nbow``? A validation-only probe for issue #28.

A bag of n-grams ignores position; a reader of word order could, for one, weigh the end of a
review (where the verdict often is) above its start. This probe asks whether that signal exists
before any reader is built: for every validation review it splits a trained ``nbow`` model's
log-odds into per-word contributions (:func:`classifier.explain.keras_view.word_contributions`,
exact: they sum to the log-odds minus the biases), sums them over parts of the review, and
compares a logistic regression on the parts with one on the plain sum, 5-fold cross-validated
inside the 10,000 validation reviews (never the test split).

    TFDS_DATA_DIR=../shared/tensorflow_datasets python experiments/position_probe.py RUN_ID

``RUN_ID``: an ``nbow`` run without refit (its model never saw the validation reviews), e.g.
``classify train --config configs/variants/nbow.yaml --set train.refit=false``. Prints one table;
takes about 5 minutes on 2 cores (the contributions of 10,000 reviews).
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
from fusion_probe import stacked_accuracy  # noqa: E402  (experiments/ is on sys.path)

from classifier.config.schema import load_config  # noqa: E402
from classifier.data.pipeline import load_raw_splits  # noqa: E402
from classifier.explain.keras_view import word_contributions  # noqa: E402
from classifier.serving.keras_engine import classifier_of, vectorizer_of  # noqa: E402
from classifier.serving.registry import load_model  # noqa: E402


def contributions(model, texts: list[bytes], batch_size: int = 256) -> list[np.ndarray]:
    """Per review, each word's contribution to the n-gram log-odds of positive."""
    classifier, vectorizer = classifier_of(model), vectorizer_of(model)
    rows = []
    for start in range(0, len(texts), batch_size):
        ids = np.asarray(vectorizer(np.array(texts[start : start + batch_size], dtype=object)))
        for review in ids:
            rows.append(word_contributions(classifier, review[: np.count_nonzero(review)])[1])
    return rows


def features(rows: list[np.ndarray], scheme: str, k: int) -> np.ndarray:
    """``sum``: the plain sum; ``parts``: sums over k equal parts of the review; ``ends``: the
    sum, and the sums over its first and its last k words."""
    out = []
    for c in rows:
        if scheme == "sum":
            out.append([c.sum()])
        elif scheme == "parts":
            edges = np.linspace(0, len(c), k + 1).astype(int)
            out.append([c[a:b].sum() for a, b in zip(edges[:-1], edges[1:], strict=True)])
        else:
            out.append([c.sum(), c[:k].sum(), c[-k:].sum()])
    return np.array(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run_id", help="an nbow run trained without refit")
    args = parser.parse_args()
    model = load_model(f"runs:/{args.run_id}")
    raw = load_raw_splits(load_config("configs/variants/nbow.yaml", []).data)
    texts, labels = zip(*raw.validation.as_numpy_iterator(), strict=True)
    labels = np.array(labels)
    start = time.time()
    rows = contributions(model, list(texts))
    print(f"contributions of {len(rows):,} validation reviews: {time.time() - start:.0f} s")
    print("| features | validation accuracy (5-fold CV) |\n|---|---:|")
    for scheme, k, name in [
        ("sum", 0, "the sum of the contributions (nbow)"),
        ("parts", 2, "2 halves"),
        ("parts", 3, "3 thirds"),
        ("parts", 5, "5 fifths"),
        ("parts", 10, "10 tenths"),
        ("ends", 20, "the sum, the first 20 and the last 20 words"),
        ("ends", 50, "the sum, the first 50 and the last 50 words"),
    ]:
        accuracy = stacked_accuracy(list(features(rows, scheme, k).T), labels, max_iter=1000)
        print(f"| {name} | {accuracy:.4f} |")


if __name__ == "__main__":
    main()

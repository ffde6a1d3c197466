"""Does Wang & Manning's interpolation help ``nbow``? A validation-only probe for issue #28.

NBSVM interpolates the trained weights with their mean magnitude, ``w' = (1 - beta) * mean|w| +
beta * w`` (Wang & Manning 2012, section 2.3; ``beta = 0.25`` for their SVM): a constant added to
every weight, which mixes the plain Naive-Bayes score (the sum of the review's scaled features)
into the trained one. For an ``nbow`` model the log-odds of positive is ``w . x + b`` with
``w = kernel[:, 1] - kernel[:, 0]`` and ``x`` the review's L2-normalised NB-scaled features, so
the interpolated log-odds is ``beta * (w . x) + (1 - beta) * mean|w| * sum(x) + b``, summed over
the features the model was trained on (``w != 0``: the kernel starts at 0 and unseen features
get no gradient).

Prints validation accuracy per ``beta`` and seed, on the 10,000 validation reviews (never the
test split):

    TFDS_DATA_DIR=../shared/tensorflow_datasets python experiments/interpolation_probe.py RUN_ID...

``RUN_ID``: ``nbow`` runs without refit (their models never saw the validation reviews), e.g. the
three ``nbow`` points of ``make sweep``. About 10 s per run on 2 cores.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from classifier.cli.startup import import_tensorflow  # noqa: E402

import_tensorflow()  # without its C++ start-up lines

import numpy as np  # noqa: E402
from keras import ops  # noqa: E402

from classifier.config.schema import load_config  # noqa: E402
from classifier.data.pipeline import load_raw_splits  # noqa: E402
from classifier.serving.keras_engine import classifier_of, vectorizer_of  # noqa: E402
from classifier.serving.registry import load_model  # noqa: E402

BETAS = (1.0, 0.75, 0.5, 0.25, 0.0)


def scores(
    model, texts: list[bytes], batch_size: int = 256
) -> tuple[np.ndarray, np.ndarray, float]:
    """Per review, the trained score ``w . x`` and the interpolation's constant part
    ``mean|w| * sum(x)``, both over the trained features; and the bias ``b``."""
    bag = classifier_of(model).get_layer("bag")
    kernel, bias = ops.convert_to_numpy(bag.kernel), ops.convert_to_numpy(bag.bias)
    w = kernel[:, 1] - kernel[:, 0]
    seen = w != 0
    trained_scores, nb_scores = [], []
    vectorizer = vectorizer_of(model)
    for start in range(0, len(texts), batch_size):
        ids = vectorizer(np.array(texts[start : start + batch_size], dtype=object))
        features, values = (ops.convert_to_numpy(a) for a in bag.feature_values(ids))
        trained_scores.append((w[features] * values).sum(axis=1))
        nb_scores.append((seen[features] * values).sum(axis=1))
    nb = np.concatenate(nb_scores) * np.abs(w[seen]).mean()
    return np.concatenate(trained_scores), nb, float(bias[1] - bias[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run_ids", nargs="+", help="nbow runs trained without refit")
    args = parser.parse_args()
    raw = load_raw_splits(load_config("configs/variants/nbow.yaml", []).data)
    texts, labels = zip(*raw.validation.as_numpy_iterator(), strict=True)
    labels = np.array(labels)
    table = {beta: [] for beta in BETAS}
    for run_id in args.run_ids:
        trained, nb, b = scores(load_model(f"runs:/{run_id}"), list(texts))
        for beta in BETAS:
            log_odds = beta * trained + (1 - beta) * nb + b
            table[beta].append(float(np.mean((log_odds > 0) == (labels == 1))))
    print(f"validation accuracy of {len(labels):,} reviews, runs {' '.join(args.run_ids)}")
    print("| beta | " + " | ".join(f"run {i + 1}" for i in range(len(args.run_ids))) + " | mean |")
    print("|---:|" + "---:|" * (len(args.run_ids) + 1))
    for beta, accuracies in table.items():
        cells = " | ".join(f"{a:.4f}" for a in accuracies)
        print(f"| {beta:.2f} | {cells} | {np.mean(accuracies):.4f} |")


if __name__ == "__main__":
    main()

"""How to calibrate a model with no held-out labelled review left (a refit model): a check on
the validation reviews alone.

A refit model trains on the validation reviews, so its calibration cannot be fitted there. This
script stands in another model for it: for every ordered pair (A, B) of a sweep's seeds of one
variant, A plays the model chosen on the validation reviews (calibrated there, temperature and
offset, as training logs) and B the model to calibrate without labels. Each way of calibrating B
is then scored by B's cross-entropy and ECE on the validation reviews, which B never trained on:

- none: B's raw log-odds;
- own: B's temperature and offset fitted on the validation labels (in-sample: a lower bound);
- T_A alone: A's temperature (what refit runs used before 2026-11-22);
- T_A and c_A: A's temperature and offset;
- soft CE on U: the T and c minimising B's cross-entropy against A's calibrated probabilities
  on the last 5,000 unlabelled reviews, as soft labels;
- moments on U: the T and c giving B the mean P(positive) and mean entropy of A's calibrated
  probabilities on those reviews (what ``train.refit`` now does:
  :class:`classifier.training.refit.ChosenConfidence`).

The test split is not read. It prints one markdown table: mean validation NLL and ECE per way
and variant.

Usage:
    TFDS_DATA_DIR=../shared/tensorflow_datasets python experiments/calibration_transfer.py \\
        --sweep 107200c79a1042e8a3cba2c62de07a16
"""

from __future__ import annotations

import argparse
import itertools
import os
from collections import defaultdict

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import mlflow  # noqa: E402
import numpy as np  # noqa: E402

from classifier.config.schema import Config  # noqa: E402
from classifier.data.batching import vectorize  # noqa: E402
from classifier.data.pipeline import load_last_unlabelled, load_raw_splits  # noqa: E402
from classifier.evaluation.calibration import Calibration, head_log_odds  # noqa: E402
from classifier.evaluation.metrics import (  # noqa: E402
    LOG_INVERSE_T,
    OFFSET,
    _golden_minimum,
    cross_entropy,
    expected_calibration_error,
    fit_temperature_and_offset,
    match_temperature_and_offset,
    sigmoid,
)
from classifier.serving.keras_engine import load_keras_model  # noqa: E402
from classifier.training.refit import CALIBRATION_REVIEWS  # noqa: E402


def soft_label_fit(log_odds: np.ndarray, reference: np.ndarray) -> tuple[float, float]:
    """T and c minimising the cross-entropy of ``sigmoid(log_odds / T + c)`` against
    ``sigmoid(reference)`` as soft labels."""
    p = sigmoid(reference)

    def loss(z):
        return float(np.mean(p * np.logaddexp(0, -z) + (1 - p) * np.logaddexp(0, z)))

    def best_c(li):
        return _golden_minimum(lambda c: loss(log_odds * np.exp(li) + c), *OFFSET, steps=60)

    li = _golden_minimum(lambda li: loss(log_odds * np.exp(li) + best_c(li)), *LOG_INVERSE_T)
    return float(np.exp(-li)), float(best_c(li))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sweep", required=True, help="parent run id of a variants sweep")
    parser.add_argument("--tracking-uri", default="sqlite:///mlflow.db")
    args = parser.parse_args()
    mlflow.set_tracking_uri(args.tracking_uri)
    cfg = Config()
    validation = load_raw_splits(cfg.data).validation
    unlabelled, _ = load_last_unlabelled(cfg.data, CALIBRATION_REVIEWS)
    runs = mlflow.search_runs(
        search_all_experiments=True, filter_string=f"tags.mlflow.parentRunId = '{args.sweep}'"
    )
    groups = defaultdict(dict)
    for _, run in runs.iterrows():
        if run["params.model.variant"] == "bow" or run["params.model.position"] == "learned":
            continue  # bow: under-confident, another story; learned: one encoder is enough
        variant = run["tags.mlflow.runName"].rsplit(" seed=", 1)[0]
        groups[variant][int(run["params.train.seed"])] = raw_log_odds(run, validation, unlabelled)

    scores = defaultdict(lambda: defaultdict(list))
    for variant, seeds in groups.items():
        for a, b in itertools.permutations(sorted(seeds), 2):
            cal_a, _, u_a = seeds[a]
            _, (v_b, labels), u_b = seeds[b]
            reference = cal_a.apply(u_a)
            ways = {
                "none": (1.0, 0.0),
                "own (validation labels)": fit_temperature_and_offset(v_b, labels),
                "T_A alone": (cal_a.temperature, 0.0),
                "T_A and c_A": (cal_a.temperature, cal_a.offset),
                "soft CE on U": soft_label_fit(u_b, reference),
                "moments on U": match_temperature_and_offset(u_b, reference),
            }
            for way, (t, c) in ways.items():
                z = v_b / t + c
                nll = cross_entropy(z, labels)
                ece = expected_calibration_error(labels, sigmoid(z))
                scores[way][variant].append((nll, ece))
    variants = list(groups)
    print("| way | mean val NLL | mean val ECE | " + " | ".join(variants) + " |")
    print("|---|---:|---:|" + "---:|" * len(variants))
    for way, by_variant in scores.items():
        every = np.array([s for v in variants for s in by_variant[v]])
        cells = [f"{np.mean([e for _, e in by_variant[v]]):.4f}" for v in variants]
        print(
            f"| {way} | {every[:, 0].mean():.4f} | {every[:, 1].mean():.4f} | "
            + " | ".join(cells)
            + " |"
        )
    pairs = sum(len(s) * (len(s) - 1) for s in groups.values())
    print(f"\n{pairs} ordered pairs; the variant columns are mean validation ECE.")


def raw_log_odds(run, validation, unlabelled):
    """A run's calibration and its uncalibrated log-odds on the validation (with labels) and the
    unlabelled reviews."""
    model = load_keras_model(f"{run.artifact_uri}/model.keras".removeprefix("file://"))
    vectorizer, classifier = model.layers[1], model.layers[2]
    calibration = Calibration(run["metrics.temperature"], run["metrics.calibration_offset"])
    v, labels = head_log_odds(classifier, vectorize(validation, vectorizer, 64, None, True))
    u, _ = head_log_odds(classifier, vectorize(unlabelled, vectorizer, 64, None, True))
    return calibration, (calibration.undo(v), labels), calibration.undo(u)


if __name__ == "__main__":
    main()

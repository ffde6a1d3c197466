"""Why temperature scaling halves one run's test ECE and not another's: a diagnostic.

For each finished training run given, it downloads the run's ``config.yaml`` and ``model.keras``
(whose head has its calibration folded in), undoes the run's calibration (its ``temperature``
and ``calibration_offset``, 0 for runs from before the offset) to recover the exact head
log-odds on the validation and test reviews, and prints two markdown tables.

On the test split, each calibration fitted on all validation reviews (as training does):

- the ECE before any calibration, after a temperature T alone, and after T and an offset
  (``sigmoid(z / T + offset)``, Platt scaling: what training folds in, except on refit runs);
- the lowest ECE any temperature from 0.3 to 3 could give on the test split itself: if it is
  above half the ECE before, no temperature fitted anywhere could halve it;
- isotonic regression (a monotone step map from probability to probability, no fixed shape);
- the ECE of the model as saved, the noise floor (the median ECE of labels drawn from the saved
  model's probabilities themselves: what a perfectly calibrated model would still score), and
  the accuracy before and after the offset (which moves the threshold).

Inside the validation reviews: T, T and an offset, and isotonic fitted on one random half and
measured on the other (a held-out check that never touches test), and the held-out
cross-entropy under T and under T and an offset (each half fitted on the other, averaged):
the check that can choose between them without the test split.

It chooses nothing and changes nothing; the test split is only measured.

Usage:
    TFDS_DATA_DIR=../shared/tensorflow_datasets python experiments/calibration_check.py RUN_ID...
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")

import mlflow  # noqa: E402
import numpy as np  # noqa: E402
import yaml  # noqa: E402

from classifier.config.schema import from_dict  # noqa: E402
from classifier.data.pipeline import load_raw_splits, make_datasets  # noqa: E402
from classifier.evaluation.calibration import Calibration, head_log_odds  # noqa: E402
from classifier.evaluation.metrics import (  # noqa: E402
    cross_entropy,
    expected_calibration_error,
    fit_temperature,
    fit_temperature_and_offset,
    sigmoid,
)
from classifier.runs.tracking import configure_tracking  # noqa: E402
from classifier.serving.keras_engine import classifier_of, load_keras_model, vectorizer_of  # noqa: E402


def noise_floor(probabilities: np.ndarray, draws: int = 50, seed: int = 0) -> float:
    """Median ECE of labels drawn from ``probabilities``: a calibrated model's expected score."""
    rng = np.random.default_rng(seed)
    scores = [
        expected_calibration_error(rng.random(len(probabilities)) < probabilities, probabilities)
        for _ in range(draws)
    ]
    return float(np.median(scores))


def fit_isotonic(probabilities: np.ndarray, labels: np.ndarray):
    """The monotone map from ``probabilities`` to calibrated ones (clipped outside the fit)."""
    from sklearn.isotonic import IsotonicRegression

    fitted = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip")
    return fitted.fit(probabilities, labels).predict


def check(run_id: str, folder: Path) -> tuple[dict[str, float | str], ...]:
    """The figures of one run (see the module docstring): test split, validation halves."""
    run = mlflow.get_run(run_id)
    # Runs from before the offset folded the temperature alone.
    calibration = Calibration(
        float(run.data.metrics["temperature"]),
        float(run.data.metrics.get("calibration_offset", 0.0)),
    )
    config = mlflow.artifacts.download_artifacts(
        run_id=run_id, artifact_path="config.yaml", dst_path=str(folder)
    )
    cfg = from_dict(yaml.safe_load(Path(config).read_text()))
    keras_file = mlflow.artifacts.download_artifacts(
        run_id=run_id, artifact_path="model.keras", dst_path=str(folder)
    )
    model = load_keras_model(keras_file)
    data = make_datasets(cfg.data, load_raw_splits(cfg.data), vectorizer_of(model), seed=0)
    classifier = classifier_of(model)
    # The saved head has the calibration folded in: undo it for the uncalibrated log-odds.
    val, val_labels = head_log_odds(classifier, data.validation)
    test, test_labels = head_log_odds(classifier, data.test)
    calibrated_test = sigmoid(test)
    val, test = calibration.undo(val), calibration.undo(test)

    order = np.random.default_rng(0).permutation(len(val))
    fit_half, check_half = order[: len(val) // 2], order[len(val) // 2 :]
    half_t = fit_temperature(val[fit_half], val_labels[fit_half])
    half_platt = Calibration(*fit_temperature_and_offset(val[fit_half], val_labels[fit_half]))
    half_isotonic = fit_isotonic(sigmoid(val[fit_half]), val_labels[fit_half])
    temperature = fit_temperature(val, val_labels)
    platt = Calibration(*fit_temperature_and_offset(val, val_labels))
    isotonic = fit_isotonic(sigmoid(val), val_labels)
    platt_test = sigmoid(platt.apply(test))
    test_ece = {
        "run": run_id[:8],
        "variant": cfg.model.variant,
        "refit": "yes" if cfg.train.refit else "no",
        "T": temperature,
        "offset (with T)": platt.offset,
        "ECE before": expected_calibration_error(test_labels, sigmoid(test)),
        "after T": expected_calibration_error(test_labels, sigmoid(test / temperature)),
        "best any T could do": best_temperature_ece(test, test_labels),
        "after T + offset": expected_calibration_error(test_labels, platt_test),
        "after isotonic": expected_calibration_error(test_labels, isotonic(sigmoid(test))),
        "as saved": expected_calibration_error(test_labels, calibrated_test),
        "noise floor": noise_floor(calibrated_test),
        "acc": float(np.mean((test >= 0) == test_labels)),
        "acc T + offset": float(np.mean((platt_test >= 0.5) == test_labels)),
    }
    validation_halves = {
        "run": run_id[:8],
        "variant": cfg.model.variant,
        "refit": "yes" if cfg.train.refit else "no",
        "T (half)": half_t,
        "ECE before": expected_calibration_error(val_labels[check_half], sigmoid(val[check_half])),
        "after T": expected_calibration_error(
            val_labels[check_half], sigmoid(val[check_half] / half_t)
        ),
        "after T + offset": expected_calibration_error(
            val_labels[check_half],
            sigmoid(half_platt.apply(val[check_half])),
        ),
        "after isotonic": expected_calibration_error(
            val_labels[check_half], half_isotonic(sigmoid(val[check_half]))
        ),
        **held_out_loss(val, val_labels, (fit_half, check_half)),
    }
    return test_ece, validation_halves


def held_out_loss(log_odds: np.ndarray, labels: np.ndarray, halves) -> dict[str, float]:
    """Cross-entropy of each half under T, and under T and an offset, fitted on the other half
    (the mean of both ways round): does the offset earn its parameter on unseen reviews?"""
    losses = {"NLL after T": [], "NLL after T + offset": []}
    for fit, check in (halves, halves[::-1]):
        t = fit_temperature(log_odds[fit], labels[fit])
        platt = Calibration(*fit_temperature_and_offset(log_odds[fit], labels[fit]))
        for name, calibrated in (
            ("NLL after T", log_odds[check] / t),
            ("NLL after T + offset", platt.apply(log_odds[check])),
        ):
            losses[name].append(cross_entropy(calibrated, labels[check]))
    return {name: float(np.mean(values)) for name, values in losses.items()}


def best_temperature_ece(log_odds: np.ndarray, labels: np.ndarray) -> float:
    """The lowest ECE of ``sigmoid(log_odds / T)`` over T from 0.3 to 3 (200 steps): a bound on
    what any temperature could do, measured on the split itself (it chooses nothing)."""
    return min(
        expected_calibration_error(labels, sigmoid(log_odds / t))
        for t in np.geomspace(0.3, 3.0, 200)
    )


def print_table(title: str, rows: list[dict[str, float | str]]) -> None:
    """A markdown table, headed by ``title``."""
    columns = list(rows[0])
    print(f"\n{title}\n")
    print("| " + " | ".join(columns) + " |")
    print("|" + "|".join("---" if i < 3 else "---:" for i in range(len(columns))) + "|")
    for row in rows:
        cells = [value if isinstance(value, str) else f"{value:.4f}" for value in row.values()]
        print("| " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_ids", nargs="+", metavar="RUN_ID")
    args = parser.parse_args()
    configure_tracking()
    with tempfile.TemporaryDirectory() as tmp:
        rows = [check(run_id, Path(tmp) / run_id) for run_id in args.run_ids]
    print_table("Test split (fitted on all validation reviews):", [test for test, _ in rows])
    print_table("Validation halves (fitted on one, measured on the other):", [v for _, v in rows])


if __name__ == "__main__":
    main()

"""Why temperature scaling halves one run's test ECE and not another's: a diagnostic.

For each finished training run given, it downloads the run's ``config.yaml`` and ``model.keras``
(whose head has the temperature T folded in), recomputes the exact head log-odds on the
validation and test reviews, and prints one markdown table:

- the test ECE before and after T (T fitted on all validation reviews, as training does);
- the same split inside the validation reviews: T fitted on one half, ECE measured on the other
  half before and after (a held-out check that never touches test);
- Platt scaling on the same halves: ``sigmoid(a * z + b)``, a temperature plus a bias, which
  can also correct a model that leans towards one class;
- isotonic regression (a monotone step map from probability to probability, no fixed shape) on
  the same halves, and fitted on all validation reviews then measured on test: whether the
  non-parametric map would reach half where one slope does not;
- the noise floor: the median ECE of labels drawn from the calibrated probabilities themselves,
  at the test split's size (what a perfectly calibrated model would still score).

It chooses nothing and changes nothing; the test split is only measured.

Usage:
    TFDS_DATA_DIR=../shared/tensorflow_datasets python benchmarks/calibration_check.py RUN_ID...
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

from classifier.calibration import head_log_odds  # noqa: E402
from classifier.config import from_dict  # noqa: E402
from classifier.data import load_raw_splits, make_datasets  # noqa: E402
from classifier.keras_predict import classifier_of, load_keras_model, vectorizer_of  # noqa: E402
from classifier.metrics import expected_calibration_error, fit_temperature, sigmoid  # noqa: E402
from classifier.tracking import configure_tracking  # noqa: E402


def noise_floor(probabilities: np.ndarray, draws: int = 50, seed: int = 0) -> float:
    """Median ECE of labels drawn from ``probabilities``: a calibrated model's expected score."""
    rng = np.random.default_rng(seed)
    scores = [
        expected_calibration_error(rng.random(len(probabilities)) < probabilities, probabilities)
        for _ in range(draws)
    ]
    return float(np.median(scores))


def fit_platt(log_odds: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """``(a, b)`` minimising the cross-entropy of ``sigmoid(a * log_odds + b)``."""
    from sklearn.linear_model import LogisticRegression

    fitted = LogisticRegression(C=1e6).fit(np.asarray(log_odds)[:, None], labels)
    return float(fitted.coef_[0, 0]), float(fitted.intercept_[0])


def fit_isotonic(probabilities: np.ndarray, labels: np.ndarray):
    """The monotone map from ``probabilities`` to calibrated ones (clipped outside the fit)."""
    from sklearn.isotonic import IsotonicRegression

    fitted = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip")
    return fitted.fit(probabilities, labels).predict


def check(run_id: str, folder: Path) -> dict[str, float | str]:
    """The figures of one run (see the module docstring)."""
    run = mlflow.get_run(run_id)
    temperature = float(run.data.metrics["temperature"])
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
    # The saved head divides by T: multiply back for the uncalibrated log-odds.
    val, val_labels = head_log_odds(classifier, data.validation)
    test, test_labels = head_log_odds(classifier, data.test)
    val, test = val * temperature, test * temperature

    order = np.random.default_rng(0).permutation(len(val))
    fit_half, check_half = order[: len(val) // 2], order[len(val) // 2 :]
    half_t = fit_temperature(val[fit_half], val_labels[fit_half])
    slope, bias = fit_platt(val[fit_half], val_labels[fit_half])
    half_isotonic = fit_isotonic(sigmoid(val[fit_half]), val_labels[fit_half])
    isotonic = fit_isotonic(sigmoid(val), val_labels)
    calibrated_test = sigmoid(test / temperature)
    return {
        "run": run_id[:8],
        "variant": cfg.model.variant,
        "refit": "yes" if cfg.train.refit else "no",
        "T": temperature,
        "test ECE before": expected_calibration_error(test_labels, sigmoid(test)),
        "test ECE after": expected_calibration_error(test_labels, calibrated_test),
        "test ECE isotonic": expected_calibration_error(test_labels, isotonic(sigmoid(test))),
        "T (half)": half_t,
        "val-half ECE before": expected_calibration_error(
            val_labels[check_half], sigmoid(val[check_half])
        ),
        "val-half ECE after": expected_calibration_error(
            val_labels[check_half], sigmoid(val[check_half] / half_t)
        ),
        "val-half ECE Platt": expected_calibration_error(
            val_labels[check_half], sigmoid(slope * val[check_half] + bias)
        ),
        "val-half ECE isotonic": expected_calibration_error(
            val_labels[check_half], half_isotonic(sigmoid(val[check_half]))
        ),
        "noise floor (test size)": noise_floor(calibrated_test),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_ids", nargs="+", metavar="RUN_ID")
    args = parser.parse_args()
    configure_tracking()
    with tempfile.TemporaryDirectory() as tmp:
        rows = [check(run_id, Path(tmp) / run_id) for run_id in args.run_ids]
    columns = list(rows[0])
    print("| " + " | ".join(columns) + " |")
    print("|" + "|".join("---" if i < 3 else "---:" for i in range(len(columns))) + "|")
    for row in rows:
        cells = [value if isinstance(value, str) else f"{value:.4f}" for value in row.values()]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

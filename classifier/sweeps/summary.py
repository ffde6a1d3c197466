"""What a finished sweep logs on its parent run: the comparison table (CSV and Markdown), the
test-accuracy and validation-accuracy charts, the best group's metrics and tags, and for a
search the best trial, the optimization history and the parameter importances.

Example (inside the parent run, once every point has ended)::

    best = log_summary(compare_runs(sweep_children(parent_id), client, by_point=True), client)
"""

from __future__ import annotations

import json
import tempfile
import warnings
from pathlib import Path

import mlflow
from mlflow.tracking import MlflowClient

from classifier.sweeps.compare import ComparisonRow
from classifier.sweeps.table import format_comparison


def log_summary(rows: list[ComparisonRow], client: MlflowClient) -> ComparisonRow | None:
    """Log the comparison artefacts and the best group's metrics on the active (parent) run."""
    if not rows:
        return None
    from classifier import plots

    with tempfile.TemporaryDirectory(prefix="classify-sweep-") as folder:
        folder = Path(folder)
        (folder / "comparison.csv").write_text(format_comparison(rows, "csv") + "\n")
        (folder / "comparison.md").write_text(format_comparison(rows, "markdown") + "\n")
        labels = [row.variant for row in rows]
        plots.plot_test_accuracy_by_variant(
            folder / "test_accuracy_by_variant.png",
            labels,
            [row.test_accuracy_mean for row in rows],
            [row.test_accuracy_std for row in rows],
            values=[row.test_accuracies for row in rows],
        )
        plots.plot_validation_accuracy_by_variant(
            folder / "val_accuracy_by_variant.png",
            {row.variant: row.val_accuracy_curves for row in rows},
        )
        mlflow.log_artifacts(str(folder))
    best = max(rows, key=lambda row: row.best_val_accuracy)
    mlflow.log_metrics(
        {
            "best_val_accuracy": best.best_val_accuracy,
            "best_test_accuracy": best.test_accuracy_mean,
            "points_finished": sum(len(row.run_ids) for row in rows),
        }
    )
    best_run = max(
        best.run_ids, key=lambda run_id: client.get_run(run_id).data.metrics["best_val_accuracy"]
    )
    mlflow.set_tags({"best_point": best.variant, "best_run_id": best_run})
    return best


def log_search(study) -> None:
    """On the active (parent) run of a search: the best trial, the optimization history and
    the parameter importances (once two trials have finished)."""
    import optuna

    from classifier import plots

    finished = [t for t in study.get_trials(deepcopy=False) if t.state.name == "COMPLETE"]
    if not finished:
        return
    best = max(finished, key=lambda trial: trial.value)
    mlflow.set_tags(
        {
            "best_trial": str(best.user_attrs.get("point", best.number + 1)),
            "best_trial_params": json.dumps(best.params),
        }
    )
    with tempfile.TemporaryDirectory(prefix="classify-search-") as folder:
        folder = Path(folder)
        ordered = sorted(finished, key=lambda trial: trial.number)
        plots.plot_optimization_history(
            folder / "optimization_history.png",
            [trial.user_attrs.get("point", trial.number + 1) for trial in ordered],
            [trial.value for trial in ordered],
        )
        if len(finished) >= 2:
            evaluator = optuna.importance.FanovaImportanceEvaluator(seed=0)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    importances = optuna.importance.get_param_importances(
                        study, evaluator=evaluator
                    )
            except (ValueError, RuntimeError):  # no variance: every trial scored the same
                importances = {}
            plots.plot_param_importances(folder / "param_importances.png", importances)
        mlflow.log_artifacts(str(folder))

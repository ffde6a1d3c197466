"""The URL that ``make ui`` prints: the experiment's runs view in the MLflow UI, with the runs'
key metrics as columns and every sweep's runs shown under it.

Finds the experiment in the local store (``mlflow.db``) read-only with the standard library.
Without that experiment, the experiment of the newest run (after the Quickstart:
``imdb-smoke``); with no run at all, the list of experiments. The MLflow UI shows no metric
column and folds a sweep's runs under their parent (while sorted by start time); so where the
experiment's runs logged metrics, a view of it is saved as the UI's own "share" button saves
one (an experiment tag ``mlflow.sharedViewState.<key>``, the same key for the same view): the
metrics of :data:`KEY_METRICS` that its runs logged as columns, the runs sorted by the first of
them (a sweep's runs listed beside their parent) and none hidden. The URL opens it.

Usage: python scripts/ui_url.py PORT [DB] [EXPERIMENT]

Example:
    $ python scripts/ui_url.py 5000 mlflow.db imdb-classifier
    http://127.0.0.1:5000/#/experiments/1/runs?viewStateShareKey=runs-3f1c9e0a2b7d4c15
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import sys
from pathlib import Path

#: The columns of the runs view, in order: the UI's own three, then the metrics that compare.
DEFAULT_COLUMNS = ["attributes.`Source`", "attributes.`Models`", "attributes.`Dataset`"]
KEY_METRICS = ["test_accuracy", "test_macro_f1", "best_val_accuracy", "test_ece", "train_time_s"]
SHARED_VIEW_TAG = "mlflow.sharedViewState."


def ui_url(port: str, db: Path, experiment: str) -> str:
    base = f"http://127.0.0.1:{port}/#/experiments"
    if not db.is_file():
        return base
    try:  # the experiment, and what its runs logged: read-only, without MLflow
        with sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True) as connection:
            row = (
                connection.execute(
                    "select experiment_id from experiments where name = ? and "
                    "lifecycle_stage = 'active'",
                    (experiment,),
                ).fetchone()
                or connection.execute(  # else the experiment of the newest run
                    "select runs.experiment_id from runs join experiments using (experiment_id) "
                    "where experiments.lifecycle_stage = 'active' order by runs.start_time desc"
                ).fetchone()
            )
            if row is None:
                return base
            experiment_id = row[0]
            metrics = {
                key
                for (key,) in connection.execute(
                    "select distinct key from latest_metrics join runs using (run_uuid) "
                    "where runs.experiment_id = ? and runs.lifecycle_stage = 'active'",
                    (experiment_id,),
                )
            }
    except sqlite3.Error:
        return base
    runs = f"{base}/{experiment_id}/runs"
    if not metrics:
        return runs
    key = save_view(db, experiment_id, [m for m in KEY_METRICS if m in metrics])
    return f"{runs}?viewStateShareKey={key}" if key else runs


def save_view(db: Path, experiment_id: str, metrics: list[str]) -> str | None:
    """Save the view (``metrics`` as columns, the runs sorted by the first, every run shown) as a
    shared view of the experiment, through MLflow; its key, or None where the store cannot
    take it."""
    state = {
        "selectedColumns": DEFAULT_COLUMNS + [f"metrics.`{metric}`" for metric in metrics],
        "runsHiddenMode": "SHOW_ALL",
        # Sorted by anything but the start time, the UI lists a sweep's runs beside its parent
        # instead of folding them under it.
        "orderByKey": f"metrics.`{metrics[0]}`",
        "orderByAsc": False,
    }
    text = json.dumps(state, sort_keys=True)
    key = "runs-" + hashlib.sha256(text.encode()).hexdigest()[:16]
    import logging

    logging.disable(logging.INFO)  # MLflow's lines about the store's schema
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{db.resolve()}")
    try:
        if client.get_experiment(experiment_id).tags.get(SHARED_VIEW_TAG + key) != text:
            client.set_experiment_tag(experiment_id, SHARED_VIEW_TAG + key, text)
    except MlflowException:
        return None
    return key


if __name__ == "__main__":
    port = sys.argv[1]
    db = Path(sys.argv[2] if len(sys.argv) > 2 else "mlflow.db")
    print(ui_url(port, db, sys.argv[3] if len(sys.argv) > 3 else "imdb-classifier"))

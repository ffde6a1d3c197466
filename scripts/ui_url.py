"""The URL that ``make ui`` prints: the experiment's runs view in the MLflow UI.

Reads the local store (``mlflow.db``) read-only with the standard library, so it costs nothing
next to the UI's start. Without that experiment, the experiment of the newest run (after the
Quickstart: ``imdb-smoke``); with no run at all, the list of experiments.

Usage: python scripts/ui_url.py PORT [DB] [EXPERIMENT]

Example:
    $ python scripts/ui_url.py 5000 mlflow.db imdb-classifier
    http://127.0.0.1:5000/#/experiments/1/runs
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path


def ui_url(port: str, db: Path, experiment: str) -> str:
    base = f"http://127.0.0.1:{port}/#/experiments"
    if not db.is_file():
        return base
    try:
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
    except sqlite3.Error:
        return base
    return f"{base}/{row[0]}/runs" if row else base


if __name__ == "__main__":
    port = sys.argv[1]
    db = Path(sys.argv[2] if len(sys.argv) > 2 else "mlflow.db")
    print(ui_url(port, db, sys.argv[3] if len(sys.argv) > 3 else "imdb-classifier"))

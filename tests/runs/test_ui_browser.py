"""The MLflow UI in a real browser: ``make ui`` on a store that holds a small sweep, its printed
address opened in headless Chromium (Debian's ``chromium``, which ``make test`` installs), and the
runs view checked for the sweep's runs, their metric columns and no error."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import mlflow
import pytest
from mlflow.tracking import MlflowClient

from scripts.browser import dump_dom, free_port, stop, wait_healthy
from tests.conftest import ROOT
from tests.sweep_helpers import invoke, spec_tree, write_spec

EXPERIMENT = "ui-browser"


@pytest.fixture(scope="module")
def swept(store, fixture_data_dir, tmp_path_factory) -> Path:
    """A sweep of two points (``attention`` and ``bow``, seed 1, one epoch) in ``store``."""
    tree = spec_tree(fixture_data_dir, experiment=EXPERIMENT, name=EXPERIMENT)
    tree["points"] = [{"model.variant": "attention"}, {"model.variant": "bow"}]
    tree["grid"] = {"train.seed": [1]}
    tree["overrides"]["train.epochs"] = 1
    spec = write_spec(tmp_path_factory.mktemp("spec") / "ui.yaml", tree)
    result = invoke("sweep", str(spec))
    assert result.exit_code == 0, result.output
    return Path(store.removeprefix("sqlite:///"))


def test_the_runs_view_lists_the_sweeps_runs_with_their_metric_columns(swept, store):
    chromium = shutil.which("chromium")
    assert chromium, (
        "Debian's chromium is not installed (make test installs it: scripts/test_setup.sh)"
    )
    mlflow.set_tracking_uri(store)
    experiment = MlflowClient().get_experiment_by_name(EXPERIMENT)
    runs = MlflowClient().search_runs([experiment.experiment_id])
    children = [run.info.run_name for run in runs if "mlflow.parentRunId" in run.data.tags]
    assert sorted(children) == ["attention seed=1", "bow seed=1"]

    port = free_port()
    env = {key: value for key, value in os.environ.items() if key != "MLFLOW_TRACKING_URI"}
    server = subprocess.Popen(
        ["make", "--no-print-directory", "ui", f"STORE={swept}", f"PORT={port}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # stop() ends make, mlflow and its workers: one process group
    )
    try:
        first = server.stdout.readline()
        match = re.fullmatch(r"MLflow UI: (\S+)  \(store: (.+); Ctrl-C stops it\)\n", first)
        assert match, first
        address, shown_store = match.groups()
        runs_view = f"http://127.0.0.1:{port}/#/experiments/{experiment.experiment_id}/runs"
        assert address.startswith(runs_view + "?viewStateShareKey=runs-")
        assert shown_store == str(swept)
        log = swept.parent / "ui.log"  # what wait_healthy would show: make's output is piped
        log.touch()
        wait_healthy(f"http://127.0.0.1:{port}", server, log)
        page = dump_dom(chromium, address, budget_ms=30000, window_size="2560,1200")
    finally:
        stop(server)
    text = " ".join(re.sub(r"<style[^>]*>.*?</style>|<[^>]+>", " ", page, flags=re.S).split())
    # The sweep's runs, listed beside their parent (not folded under it), and their metrics.
    for name in ("attention seed=1", "bow seed=1", EXPERIMENT):
        assert f" {name} " in text, f"{name} is not in the runs view: {text[:2000]}"
    columns = "best_val_accuracy test_accuracy test_ece test_macro_f1 train_time_s"
    assert columns in text, f"the metric columns are not there: {text[:2000]}"
    assert "Sort: test_accuracy" in text
    for problem in ("Something went wrong", "error", "Error"):
        assert problem not in text, text[:2000]

#!/usr/bin/env python
"""Screenshot of the MLflow UI comparing a sweep's variants (chart view), for the README.

It finds the sweep's parent run in the store (by default the newest run of
``configs/sweeps/variants.yaml``, the sweep ``make sweep`` runs), saves a view of the
experiment as the UI's own "share" button does (an experiment tag
``mlflow.sharedViewState.<key>``), starts ``mlflow ui`` on the store, drives headless Chromium
(Debian's ``chromium`` package) to that view in chart mode, saves the PNG and stops the server
by its PID. The view's URL is printed: the same view opens in ``make ui``.

The view holds the sweep's child runs, all shown, grouped by variant (the ``sweep_label`` tag)
with the mean over seeds, and its own chart cards rather than the ones MLflow generates (bars
from 0, on which 0.87 and 0.91 look alike, and legends that name the groups that fit): two
scatter plots, one point per variant, of test accuracy against the best validation accuracy
and against the training time (plotly fits both axes to the points), and validation accuracy
and validation loss per epoch, one line per variant on a y range fitted to the values logged.
Two charts a row and the run list hidden give every legend the width to name every variant.

Needs a finished (or partly finished) sweep in the store and ``apt-get install chromium``. The
server and browser steps are ``scripts/browser.py``, which the UI's browser test shares.

Usage:
    .venv/bin/python scripts/screenshot_mlflow_ui.py                      # docs/mlflow-compare.png
    .venv/bin/python scripts/screenshot_mlflow_ui.py --spec configs/sweeps/quick.yaml
    .venv/bin/python scripts/screenshot_mlflow_ui.py --tracking-uri sqlite:////tmp/s/mlflow.db \\
        --sweep 4f59b823659e48ad8025130c963e681d --output /tmp/compare.png
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from browser import BROWSER_HOST, free_port, screenshot, stop, wait_healthy  # noqa: E402 - scripts/

SHARED_VIEW_TAG = "mlflow.sharedViewState."  # what the UI's "share" button writes
# The view's charts, in one section: test accuracy against the best validation accuracy and
# against the training time (scatter plots), and validation accuracy and loss per epoch.
SECTION_ID = "sweep-variants"
SCATTERS = [("best_val_accuracy", "test_accuracy"), ("train_time_s", "test_accuracy")]
LINES = ["val_accuracy", "val_loss"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--tracking-uri",
        default=os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{ROOT / 'mlflow.db'}",
        help="The SQLite store (default: $MLFLOW_TRACKING_URI, else mlflow.db in the project).",
    )
    parser.add_argument(
        "--artifact-root",
        help="--default-artifact-root for mlflow ui (default: mlruns/ beside the database).",
    )
    parser.add_argument(
        "--spec",
        default=str(ROOT / "configs" / "sweeps" / "variants.yaml"),
        help="Find the newest parent run of this sweep spec (default: configs/sweeps/variants.yaml).",
    )
    parser.add_argument(
        "--sweep", metavar="RUN_ID", help="The sweep's parent run (overrides --spec)."
    )
    parser.add_argument(
        "--output", default=str(ROOT / "docs" / "mlflow-compare.png"), help="PNG to write."
    )
    parser.add_argument("--columns", type=int, default=2, help="Charts per row.")
    parser.add_argument("--card-height", type=int, default=420, help="Chart height in pixels.")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    # Four charts (two rows) fill a 2240 x 1250 window, wide enough for each legend to name the
    # nine variants of `make sweep` in two lines (at 1920 the third line is cut off).
    parser.add_argument("--window-size", default="2240,1250", help="Width,height in pixels.")
    parser.add_argument(
        "--budget-ms", type=int, default=60000, help="Chromium's --virtual-time-budget."
    )
    args = parser.parse_args(argv)

    if not args.tracking_uri.startswith("sqlite:///"):
        parser.error("--tracking-uri must be a sqlite:/// store (mlflow ui is started on it)")
    database = Path(args.tracking_uri.removeprefix("sqlite:///"))
    if not database.is_file():
        parser.error(f"no MLflow store at {database}; run `make sweep` first")
    if shutil.which(args.chromium) is None:
        parser.error(f"{args.chromium} not found; install it with: apt-get install -y chromium")
    artifact_root = args.artifact_root or str(database.parent / "mlruns")

    os.environ["MLFLOW_TRACKING_URI"] = args.tracking_uri
    experiment_id, parent_id = find_sweep(args.spec, args.sweep)
    key = save_view(experiment_id, parent_id, args.columns, args.card_height)
    route = f"/#/experiments/{experiment_id}/runs?viewStateShareKey={key}&compareRunsMode=CHART"

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    browser_base = f"http://{BROWSER_HOST}:{port}"
    log_path = Path(tempfile.mkdtemp(prefix="mlflow-ui-")) / "server.log"
    log = log_path.open("w")
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    env.pop("MLFLOW_TRACKING_URI")
    server = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "mlflow"),
            "ui",
            "--backend-store-uri",
            args.tracking_uri,
            "--default-artifact-root",
            artifact_root,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
            "--allowed-hosts",
            f"{BROWSER_HOST}:{port},127.0.0.1:{port},localhost:{port}",
            "--cors-allowed-origins",
            browser_base,
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    print(f"mlflow ui (pid {server.pid}) on {base}, log {log_path}")
    output = Path(args.output).resolve()
    try:
        wait_healthy(base, server, log_path)
        output.parent.mkdir(parents=True, exist_ok=True)
        screenshot(args.chromium, browser_base + route, output, args.window_size, args.budget_ms)
    finally:
        stop(server)
        log.close()
    print(f"wrote {output} ({output.stat().st_size:,} bytes)")
    print(f"the same view in `make ui`: http://127.0.0.1:5000{route}")
    return 0


def find_sweep(spec_path: str, sweep_id: str | None) -> tuple[str, str]:
    """The experiment id and the parent run id of the sweep to show."""
    import mlflow
    from mlflow.tracking import MlflowClient

    from classifier.runs.tracking import SPEC_HASH_TAG, configure_tracking, find_sweep_parent
    from classifier.sweeps.spec import expand, load_spec, spec_hash

    configure_tracking()
    client = MlflowClient()
    if sweep_id:
        run = client.get_run(sweep_id)
        if SPEC_HASH_TAG not in run.data.tags:
            sys.exit(f"run {sweep_id} is not a sweep's parent run")
        return run.info.experiment_id, sweep_id
    points = expand(load_spec(spec_path))
    experiment = client.get_experiment_by_name(points[0].config.experiment)
    parent = experiment and find_sweep_parent(experiment.experiment_id, spec_hash(points))
    if not parent:
        sys.exit(f"no sweep of {spec_path} in {mlflow.get_tracking_uri()}; run it first")
    return experiment.experiment_id, parent


def save_view(experiment_id: str, parent_id: str, columns: int, card_height: int) -> str:
    """Store the comparison view as a shared view of the experiment; return its key."""
    from mlflow.tracking import MlflowClient

    from classifier.runs.tracking import LABEL_TAG, PARENT_TAG

    client = MlflowClient()
    children = f"tags.{PARENT_TAG} = '{parent_id}'"
    run_ids = [
        run.info.run_id for run in client.search_runs([experiment_id], children, max_results=10000)
    ]
    cards = [scatter(x, y) for x, y in SCATTERS]
    cards += [line(metric, history_range(client, run_ids, metric)) for metric in LINES]
    # The UI adds a generated bar chart for every metric that no card names by its metricKey
    # (RunsChartsCardConfig.updateChartAndSectionConfigs); a deleted bar card for each metric of
    # the scatter plots keeps their bars out of the view.
    cards += [
        {**card("BAR", metricKey=metric), "uuid": f"bar-{metric}", "deleted": True}
        for metric in sorted({key for axes in SCATTERS for key in axes})
    ]
    shown = sorted({key for axes in SCATTERS for key in axes} | set(LINES))
    state = {
        "searchFilter": children,
        # Sorted by attributes.start_time (the UI's default), the UI also fetches the children's
        # parent run, which would join the charts as an "Unassigned" group in every legend.
        "orderByKey": "tags.`mlflow.runName`",
        "orderByAsc": True,
        "runsHiddenMode": "SHOW_ALL",
        "groupBy": {
            "aggregateFunction": "average",
            "groupByKeys": [{"mode": "tag", "groupByData": LABEL_TAG}],
        },
        "useGroupedValuesInCharts": True,
        "hideEmptyCharts": True,
        # The charts get the page's width: a legend has two lines and names the groups that fit.
        "runListHidden": True,
        "compareRunCharts": cards,
        "compareRunSections": [
            {
                "uuid": SECTION_ID,
                "name": "Sweep variants (mean over seeds)",
                "display": True,
                "isReordered": True,
                "columns": columns,
                "cardHeight": card_height,
            },
            # Where the UI puts the generated charts of the other metrics: collapsed, and hidden
            # by the charts filter below.
            {
                "uuid": "model-metrics",
                "name": "Model metrics",
                "display": False,
                "isReordered": False,
            },
            {
                "uuid": "system-metrics",
                "name": "System metrics",
                "display": False,
                "isReordered": False,
            },
        ],
        "isAccordionReordered": True,
        "chartsSearchFilter": f"^({'|'.join(shown)})$",
    }
    text = json.dumps(state, sort_keys=True)
    key = "sweep-" + hashlib.sha256(text.encode()).hexdigest()[:16]
    client.set_experiment_tag(experiment_id, SHARED_VIEW_TAG + key, text)
    return key


def card(chart_type: str, **config) -> dict:
    """A chart card's configuration (RunsChartsCardConfig in MLflow's runs-charts.types.ts)."""
    return {
        "type": chart_type,
        "metricSectionId": SECTION_ID,
        "deleted": False,
        "isGenerated": False,
        "runsCountToCompare": 100,
        **config,
    }


def scatter(x: str, y: str) -> dict:
    """One point per variant; plotly fits both axes to the points."""
    axis = {"type": "METRIC"}
    return card("SCATTER", uuid=f"{x}-{y}", xaxis={**axis, "key": x}, yaxis={**axis, "key": y})


def line(metric: str, y_range: dict[str, float]) -> dict:
    """One line per variant over the epochs, on the y range ``y_range`` (yMin, yMax)."""
    return card(
        "LINE",
        uuid=metric,
        metricKey=metric,
        selectedMetricKeys=[metric],
        xAxisKey="step",
        selectedXAxisMetricKey="",
        xAxisScaleType="linear",
        scaleType="linear",
        lineSmoothness=0,
        useGlobalXaxisKey=False,
        useGlobalLineSmoothing=False,
        displayPoints=True,
        range=y_range,
    )


def history_range(client, run_ids: list[str], metric: str) -> dict[str, float]:
    """The y range that holds every value of ``metric`` the runs logged, 5% to spare.

    MLflow fills the band between a group's lowest and highest seed down to zero
    (``fill: "tozeroy"``), which would stretch an auto-ranged accuracy axis to 0.
    """
    values = [m.value for run_id in run_ids for m in client.get_metric_history(run_id, metric)]
    if not values:
        return {}
    low, high = min(values), max(values)
    spare = (high - low) * 0.05 or 0.01
    return {"yMin": round(low - spare, 4), "yMax": round(high + spare, 4)}


if __name__ == "__main__":
    sys.exit(main())

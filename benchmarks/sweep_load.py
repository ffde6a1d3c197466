"""Sweep load: 8 workers (``--threads 1``) on one sweep of 16 fixture-sized points (120
training reviews, 2 epochs), against the stack of ``make server`` and, for reference, against a
local SQLite store (``mlflow.db`` and ``sweeps.db``) in the same run.

Checks what a shared server must never do under load, and stops with the reason if it did:
lose a metric (every child run FINISHED, each epoch's metrics logged once) or run a point
twice (one child run per point). Prints the wall time and each point's median time (its child
run's start to end: training, evaluation, logging and registration) on each store; their
difference is the time per point that the server adds.

Usage:
    TFDS_DATA_DIR=../shared/tensorflow_datasets python benchmarks/sweep_load.py
    python benchmarks/sweep_load.py --workers 4 --points 8
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml
from machine import cpu_model
from mlflow.tracking import MlflowClient
from sweep_throughput import ROOT, run_pass, server_stack

EPOCHS = 2


def spec(folder: Path, label: str, points: int) -> Path:
    """``points`` fixture-sized points (``block``, seeds 1..points) on the real IMDB reviews."""
    tree = {
        "name": f"load-{label}",
        "base": str(ROOT / "configs" / "default.yaml"),
        "experiment": f"sweep-load-{label}-{int(time.time())}",
        "overrides": {
            "data.train_size": 120,
            "data.val_size": 40,
            "data.test_size": 80,
            "data.vocab_size": 64,
            "data.sequence_length": 24,
            "data.batch_size": 16,
            "model.num_layers": 1,
            "train.epochs": EPOCHS,
            "train.early_stopping_patience": None,
            "train.refit": False,
            "train.registered_model": f"sweep-load-{label}",
        },
        "points": [{"model.variant": "block"}],
        "grid": {"train.seed": list(range(1, points + 1))},
    }
    path = folder / f"load-{label}.yaml"
    path.write_text(yaml.safe_dump(tree, sort_keys=False))
    return path


def checked_point_times(env: dict[str, str], spec_path: Path, points: int) -> list[float]:
    """Each point's child run time (s); SystemExit where a metric is lost or a point doubled."""
    experiment = yaml.safe_load(spec_path.read_text())["experiment"]
    saved = {name: os.environ.get(name) for name in env if name.startswith("MLFLOW_")}
    os.environ.update({k: v for k, v in env.items() if k.startswith(("MLFLOW_", "PG"))})
    try:
        client = MlflowClient(env["MLFLOW_TRACKING_URI"])
        found = client.get_experiment_by_name(experiment)
        runs = client.search_runs([found.experiment_id], max_results=1000)
        children = [run for run in runs if "sweep_point" in run.data.tags]
        per_point = Counter(run.data.tags["sweep_point"] for run in children)
        if sorted(per_point) != sorted(str(n) for n in range(1, points + 1)):
            raise SystemExit(f"points without a child run: {sorted(per_point)}")
        if set(per_point.values()) != {1}:
            raise SystemExit(f"a point ran twice: {per_point}")
        for run in children:
            if run.info.status != "FINISHED":
                raise SystemExit(f"run {run.info.run_id} is {run.info.status}")
            for name in ("val_accuracy", "train_loss", "epoch_time_s"):
                steps = sorted(m.step for m in client.get_metric_history(run.info.run_id, name))
                if steps != list(range(1, EPOCHS + 1)):
                    raise SystemExit(f"run {run.info.run_id}: {name} steps {steps}")
        return [(run.info.end_time - run.info.start_time) / 1000 for run in children]
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--points", type=int, default=16)
    parser.add_argument("--quick", action="store_true", help="4 workers on 4 points")
    args = parser.parse_args()
    if args.quick:
        args.workers, args.points = 4, 4
    folder = Path(tempfile.mkdtemp(prefix="classify-load-"))
    folder.chmod(0o755)
    results = {}
    local = {
        **os.environ,
        "MLFLOW_TRACKING_URI": f"sqlite:///{folder / 'local' / 'mlflow.db'}",
    }
    (folder / "local").mkdir()
    passes = [
        ("local", local, f"sqlite:///{folder / 'local' / 'sweeps.db'}"),
        ("server", None, None),
    ]
    for label, env, storage in passes:
        path = spec(folder, label, args.points)
        if env is None:
            with server_stack(folder / "server") as (env, storage):
                wall = run_pass(path, args.workers, 1, env, storage, folder)
                times = checked_point_times(env, path, args.points)
        else:
            wall = run_pass(path, args.workers, 1, env, storage, folder)
            times = checked_point_times(env, path, args.points)
        results[label] = (wall, statistics.median(times))
    print(f"## Sweep load ({args.points} points, {args.workers} workers of --threads 1)")
    print()
    print(f"{cpu_model()}, {os.cpu_count()} cores; every point one FINISHED child run, every")
    print("epoch's metrics once, on both stores")
    print()
    print("| store | wall time (s) | median point time (s) |")
    print("|---|---:|---:|")
    for label, (wall, point) in results.items():
        name = "PostgreSQL + mlflow server (make server)" if label == "server" else "local SQLite"
        print(f"| {name} | {wall:.0f} | {point:.1f} |")
    added = results["server"][1] - results["local"][1]
    print()
    print(f"The server adds {added:+.1f} s per point (median point times, same run).")
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()

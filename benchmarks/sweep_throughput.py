"""Sweep throughput: one sweep run by 1 worker, then by 2 workers, then by 2 workers of
``--threads 1``, against a real PostgreSQL and ``mlflow server`` started by
``scripts/server.sh`` (what ``make server`` runs).

Each worker is a ``classify sweep SPEC --storage URL`` process, started as a user would start it
on another machine. The wall time counts from the first worker's start to the last worker's
exit, TensorFlow's import and the MLflow logging included; the speed-up is against the first
pass. Each pass runs a fresh copy of the spec (its own experiment), so no pass reuses another's
runs. Prints one markdown table.

Usage:
    TFDS_DATA_DIR=../shared/tensorflow_datasets python benchmarks/sweep_throughput.py
    python benchmarks/sweep_throughput.py --quick   # the quick sweep on 1,000 reviews, 1 epoch
    python benchmarks/sweep_throughput.py --workers 1,2,2/1   # 2/1: 2 workers, --threads 1 each
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import yaml
from machine import cpu_model

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "configs" / "sweeps" / "quick.yaml"
QUICK = {
    "data.train_size": 1000,
    "data.val_size": 500,
    "data.test_size": 1000,
    "train.epochs": 1,
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def server_stack(folder: Path) -> Iterator[tuple[dict[str, str], str]]:
    """``scripts/server.sh start`` on free ports with its data in ``folder``; yields a worker's
    environment (the export lines it printed, run by bash: tracking URI, login, .pgpass) and
    the storage URL of its sweep line. Stopped afterwards."""
    folder.mkdir(parents=True)
    folder.chmod(0o755)
    server_env = {
        **os.environ,
        "SERVER_DIR": str(folder),
        "PG_PORT": str(free_port()),
        "PORT": str(free_port()),
        "MLFLOW": str(Path(sys.executable).parent / "mlflow"),
    }
    server_env.pop("MLFLOW_TRACKING_URI", None)
    script = str(ROOT / "scripts" / "server.sh")
    started = subprocess.run([script, "start"], env=server_env, capture_output=True, text=True)
    if started.returncode:
        raise SystemExit(started.stdout + started.stderr)
    try:
        lines = started.stdout.splitlines()
        storage = next(line for line in lines if "--storage " in line).split("--storage ", 1)[1]
        exports = "\n".join(line for line in lines if line.startswith("export "))
        shell = subprocess.run(
            ["bash", "-c", exports + "\nenv -0"], capture_output=True, check=True
        )
        yield (
            dict(item.split("=", 1) for item in shell.stdout.decode().split("\0") if item),
            storage,
        )
    finally:
        subprocess.run([script, "stop"], env=server_env, capture_output=True)


def spec_copy(folder: Path, label: str, quick: bool) -> Path:
    """The quick sweep under a name and experiment of this pass, with absolute paths."""
    tag = label.replace("/", "t")
    tree = yaml.safe_load(SPEC.read_text())
    tree["name"] = f"throughput-{tag}"
    tree["experiment"] = f"sweep-throughput-{tag}-{int(time.time())}"
    tree["base"] = str((SPEC.parent / tree["base"]).resolve())
    if quick:
        tree["overrides"].update(QUICK)
    path = folder / f"spec-{tag}.yaml"
    path.write_text(yaml.safe_dump(tree, sort_keys=False))
    return path


def run_pass(
    spec: Path, workers: int, threads: int | None, env: dict, storage: str, logs: Path
) -> float:
    command = [
        str(Path(sys.executable).parent / "classify"),
        "sweep",
        str(spec),
        "--storage",
        storage,
        *(["--threads", str(threads)] if threads else []),
    ]
    started = time.perf_counter()
    processes = []
    for number in range(workers):
        with (logs / f"{spec.stem}-worker{number}.log").open("w") as out:
            processes.append(
                subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
            )
    codes = [process.wait() for process in processes]
    wall = time.perf_counter() - started
    if any(codes):
        raise SystemExit(f"a worker failed ({codes}); logs in {logs}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 reviews and 1 epoch per point")
    parser.add_argument(
        "--workers",
        default="1,2,2/1",
        help="passes to time: worker counts, W/T for W workers of --threads T (default 1,2,2/1)",
    )
    args = parser.parse_args()
    # SIGTERM (kill, a job scheduler) unwinds like Ctrl-C, so that the server is stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    passes = args.workers.split(",")

    folder = Path(tempfile.mkdtemp(prefix="classify-throughput-"))
    folder.chmod(0o755)
    walls = {}
    with server_stack(folder / "server") as (env, storage):
        for label in passes:
            workers, _, threads = label.partition("/")
            spec = spec_copy(folder, label, args.quick)
            walls[label] = run_pass(
                spec, int(workers), int(threads) if threads else None, env, storage, folder
            )
    points = len(yaml.safe_load(SPEC.read_text())["points"])
    print(f"## Sweep throughput ({'quick: ' if args.quick else ''}{points} points of {SPEC.name})")
    print()
    print(f"{cpu_model()}, {os.cpu_count()} cores; PostgreSQL + mlflow server on 127.0.0.1")
    print()
    print("| workers | threads each | wall time (s) | points per minute | speed-up |")
    print("|---:|---:|---:|---:|---:|")
    for label, wall in walls.items():
        workers, _, threads = label.partition("/")
        ratio = walls[passes[0]] / wall
        row = f"| {workers} | {threads or 'default'} | {wall:.0f} | {points / wall * 60:.2f} |"
        print(f"{row} {ratio:.2f}x |")
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()

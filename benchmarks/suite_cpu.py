"""Where `make test`'s time goes: the CPU of its tests by folder and file, of the trainings its
workers run and of the subprocesses its tests start.

On 2 cores the suite is CPU-bound (its user and system CPU is about 1.7 times its wall time), so a
faster `make test` needs less CPU, not more workers, and this says where the CPU is. It runs
pytest as `make test` does (``-n 3 --dist loadfile --no-loadscope-reorder`` on 2 cores) with
this file as a pytest plugin that records, for every test, the CPU of its worker
(``RUSAGE_SELF``) and of the subprocesses the worker waited for (``RUSAGE_CHILDREN``), setup
and teardown included, and every ``classifier.training.train.train`` call in the workers; and
with a ``sitecustomize`` module (written into a temporary folder put first on ``PYTHONPATH``)
that records, when a Python subprocess exits, its own CPU, the test that started it and whether
it imported TensorFlow. A subprocess killed with SIGKILL, or started with an environment of its
own that drops ``PYTHONPATH``, leaves no record, so the subprocess counts are lower bounds.

Usage:
    python benchmarks/suite_cpu.py                # the whole suite, as `make test` runs it
    python benchmarks/suite_cpu.py --quick        # a folder and two files (a minute)
    python benchmarks/suite_cpu.py -- tests/training -x   # other pytest arguments after --
    python benchmarks/suite_cpu.py --records cpu.json     # and every record, test by test
"""

from __future__ import annotations

import json
import os
import re
import resource
import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest

#: What ``--quick`` runs: a minute or two, with trainings and ``classify`` subprocesses.
QUICK = ["tests/layers", "tests/training/test_train.py", "tests/cli/test_cli.py"]

#: pytest's last line: "1226 passed, 2 skipped in 556.58s (0:09:16)".
SUMMARY = re.compile(r"\d+ (passed|failed).* in [\d.]+s")

#: Where the plugin and the subprocesses write their records (set by :func:`main`).
RECORDS = "SUITE_CPU_RECORDS"

#: What every Python process started under the benchmark runs first: a record at exit.
SITECUSTOMIZE = (
    """\
import atexit, json, os, resource, sys, time
_started = time.time()
def _record():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    record = {"test": os.environ.get("PYTEST_CURRENT_TEST", ""), "argv": sys.argv[:3],
              "cpu": usage.ru_utime + usage.ru_stime, "wall": time.time() - _started,
              "tensorflow": "tensorflow" in sys.modules}
    folder = os.path.join(os.environ["RECORDS"], "processes")
    try:
        with open(os.path.join(folder, "%d-%d.json" % (os.getpid(), _started * 1e6)), "w") as out:
            json.dump(record, out)
    except OSError:
        pass
atexit.register(_record)
"""
).replace("RECORDS", RECORDS)


# --- the pytest plugin (this module, loaded with -p suite_cpu in every worker) -----------------

_tests: list[dict] = []
_trainings: list[dict] = []


def _cpu() -> tuple[float, float]:
    own, waited = (
        resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime, waited.ru_utime + waited.ru_stime


def pytest_collectstart(collector) -> None:
    """Count trainings from the start: before any test module binds ``train`` by name (in the
    processes that collect: the workers, not xdist's controller)."""
    if isinstance(collector, pytest.Session):
        import classifier.training.train as training

        training.train = _counted(training.train)


def _counted(train):
    def counted(cfg=None, *args, **kwargs):
        before, start = _cpu()[0], time.perf_counter()
        try:
            return train(cfg, *args, **kwargs)
        finally:
            _trainings.append(
                {
                    "test": os.environ.get("PYTEST_CURRENT_TEST", ""),
                    "variant": cfg.model.variant if cfg is not None else "(resumed)",
                    "cpu": _cpu()[0] - before,
                    "wall": time.perf_counter() - start,
                }
            )

    return counted


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Time each test's setup, call and teardown."""
    (own, waited), start = _cpu(), time.perf_counter()
    yield
    own_after, waited_after = _cpu()
    _tests.append(
        {
            "id": item.nodeid,
            "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
            "started": time.time() - (time.perf_counter() - start),
            "own": own_after - own,
            "waited": waited_after - waited,
            "wall": time.perf_counter() - start,
        }
    )


def pytest_sessionfinish(session) -> None:
    folder = os.environ.get(RECORDS)
    if folder and (_tests or _trainings):
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        path = Path(folder) / f"worker-{worker}.json"
        path.write_text(json.dumps({"tests": _tests, "trainings": _trainings}))


# --- the benchmark ------------------------------------------------------------------------------


def main() -> None:
    import argparse
    import subprocess
    import sys
    import tempfile

    from machine import cpu_model

    root = Path(__file__).resolve().parents[1]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"{' '.join(QUICK)} alone")
    parser.add_argument(
        "--jobs", type=int, default=None, help="xdist workers (make test's: cores + 1, at most 4)"
    )
    parser.add_argument(
        "--records", type=Path, help="also write every test, training and subprocess to this JSON"
    )
    parser.add_argument(
        "pytest_args", nargs="*", help="after --: what pytest gets instead of the whole suite"
    )
    args = parser.parse_args()
    jobs = args.jobs if args.jobs is not None else min((os.cpu_count() or 1) + 1, 4)
    selection = args.pytest_args or (QUICK if args.quick else [])
    with tempfile.TemporaryDirectory(prefix="suite-cpu-") as folder:
        records = Path(folder)
        (records / "processes").mkdir()
        (records / "site").mkdir()
        (records / "site" / "sitecustomize.py").write_text(SITECUSTOMIZE)
        python_path = [str(records / "site"), str(root / "benchmarks")]
        python_path += [os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []
        env = {**os.environ, RECORDS: folder, "PYTHONPATH": os.pathsep.join(python_path)}
        command = [sys.executable, "-m", "pytest", "-p", "suite_cpu", "-q"]
        if jobs:
            command += ["-n", str(jobs), "--dist", "loadfile", "--no-loadscope-reorder"]
        print(f"suite_cpu: {' '.join(command[1:] + selection)}", file=sys.stderr, flush=True)
        start = time.perf_counter()
        with subprocess.Popen(
            [*command, *selection], cwd=root, env=env, stdout=subprocess.PIPE, text=True
        ) as pytest_run:
            output = []
            for line in pytest_run.stdout:  # pytest's progress, on stderr
                print(line, end="", file=sys.stderr, flush=True)
                output.append(line)
        wall = time.perf_counter() - start
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        tests, trainings = [], []
        for recorded in map(json.loads, map(Path.read_text, records.glob("worker-*.json"))):
            tests += recorded["tests"]
            trainings += recorded["trainings"]
        processes = [json.loads(p.read_text()) for p in (records / "processes").glob("*.json")]
    processes = [p for p in processes if p["test"]]  # started by a test (not the workers)
    if args.records:
        everything = {"tests": tests, "trainings": trainings, "processes": processes}
        args.records.write_text(json.dumps(everything, indent=1))
    summary = [line.strip() for line in output if SUMMARY.search(line)]
    outcome = summary[-1] if summary else f"pytest exit code {pytest_run.returncode}"
    machine = f"{jobs} workers; {cpu_model()}, {os.cpu_count()} cores"
    print(f"### `make test`'s CPU ({outcome}; {machine})\n")
    print_totals(wall, usage.ru_utime + usage.ru_stime, tests, trainings, processes)
    print_by(tests, "folder", folder_of)
    print_by(tests, "file", lambda test: test["id"].split("::")[0], limit=15)
    print_trainings(trainings)
    print_processes(processes)
    if pytest_run.returncode != 0:
        sys.exit(f"suite_cpu: pytest exited with {pytest_run.returncode}")


def folder_of(test: dict) -> str:
    """``tests/training/test_train.py::x`` -> ``training``; a file at the top: ``tests``."""
    parts = test["id"].split("::")[0].split("/")
    return parts[1] if len(parts) > 2 else parts[0]


def cpu_of(test: dict) -> float:
    return test["own"] + test["waited"]


def print_totals(wall: float, cpu: float, tests, trainings, processes) -> None:
    tested = sum(cpu_of(test) for test in tests)
    print("| | seconds |")
    print("|---|---:|")
    print(f"| wall time of the run | {wall:.0f} |")
    print(f"| CPU of the whole run (pytest, its workers and what they waited for) | {cpu:.0f} |")
    print(f"| CPU of the tests (setup and teardown included) | {tested:.0f} |")
    print(f"| of which in the workers | {sum(test['own'] for test in tests):.0f} |")
    print(
        f"| of which in subprocesses the workers waited for | {sum(test['waited'] for test in tests):.0f} |"
    )
    print(
        f"| of which in {len(trainings)} trainings in the workers | {sum(t['cpu'] for t in trainings):.0f} |"
    )
    tensorflow = [p for p in processes if p["tensorflow"]]
    print(
        f"| {len(tensorflow)} subprocesses that imported TensorFlow (recorded) | {sum(p['cpu'] for p in tensorflow):.0f} |"
    )
    others = [p for p in processes if not p["tensorflow"]]
    print(
        f"| {len(others)} other Python subprocesses (recorded) | {sum(p['cpu'] for p in others):.0f} |\n"
    )


def print_by(tests, name: str, key, limit: int | None = None) -> None:
    cpu, wall, count = Counter(), Counter(), Counter()
    for test in tests:
        cpu[key(test)] += cpu_of(test)
        wall[key(test)] += test["wall"]
        count[key(test)] += 1
    total = sum(cpu.values()) or 1.0
    print(f"| {name} | tests | CPU (s) | share | wall in its worker (s) |")
    print("|---|---:|---:|---:|---:|")
    for group, seconds in cpu.most_common(limit):
        print(
            f"| {group} | {count[group]} | {seconds:.0f} | {seconds / total:.0%} | {wall[group]:.0f} |"
        )
    print()


def print_trainings(trainings) -> None:
    if not trainings:
        return
    by_variant: dict[str, list[dict]] = defaultdict(list)
    for training in trainings:
        by_variant[str(training["variant"])].append(training)
    print("| trainings in the workers, by variant | count | CPU (s) | CPU each (s) |")
    print("|---|---:|---:|---:|")
    for variant, runs in sorted(
        by_variant.items(), key=lambda item: -sum(t["cpu"] for t in item[1])
    ):
        seconds = sum(t["cpu"] for t in runs)
        print(f"| {variant} | {len(runs)} | {seconds:.0f} | {seconds / len(runs):.1f} |")
    print()


def print_processes(processes) -> None:
    tensorflow = [p for p in processes if p["tensorflow"]]
    if not tensorflow:
        return
    by_file: dict[str, list[dict]] = defaultdict(list)
    for process in tensorflow:
        by_file[process["test"].split("::")[0]].append(process)
    print("| subprocesses that imported TensorFlow, by test file | count | CPU (s) |")
    print("|---|---:|---:|")
    for name, started in sorted(by_file.items(), key=lambda item: -sum(p["cpu"] for p in item[1])):
        print(f"| {name} | {len(started)} | {sum(p['cpu'] for p in started):.0f} |")
    print()


if __name__ == "__main__":
    main()

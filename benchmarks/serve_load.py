"""The registered model served over REST under load, against the server's own floor.

Starts two ``mlflow models serve`` servers side by side, as docs/serving.md starts one
(``--env-manager local``, ``--workers`` as given): the registered model (pinned to its version)
and the floor, a pyfunc model with the same signature that answers every review with a constant
(what MLflow's server costs by itself: HTTP, parsing the request into a DataFrame, the schema,
the JSON answer). Clients are threads of this process, each with its own keep-alive connection,
each posting one review per request, one request at a time; they share the machine's cores
with the server. For each request kind (one sentence: the first sentence of an IMDB training
review; a full review) and number of clients, the two servers are loaded in turn for
``--seconds`` each: requests per second, median and 99th-percentile latency, and errors (any
answer but a 200). The last column is the model's requests per second over the floor's.

``--soak SECONDS`` instead loads the model's server alone with ``--clients`` (16) clients for
that long and samples its memory (the RSS of every process of the server) every
``--every`` seconds: a row per sample, then the errors and the memory at the start, the end and
its peak.

Usage:
    TFDS_DATA_DIR=../shared/tensorflow_datasets python benchmarks/serve_load.py
    python benchmarks/serve_load.py --quick               # 3 s a cell
    python benchmarks/serve_load.py --workers 2 --clients 16
    python benchmarks/serve_load.py --soak 600 --clients 16
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import mlflow  # noqa: E402
import pandas as pd  # noqa: E402
from machine import cpu_model  # noqa: E402
from mlflow.tracking import MlflowClient  # noqa: E402

from classifier.config.schema import DataConfig  # noqa: E402
from classifier.data.imdb import tfds_load  # noqa: E402
from classifier.serving.registry import pyfunc_signature  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SENTENCE = re.compile(r"(?<=[.!?])\s")


class Constant(mlflow.pyfunc.PythonModel):
    """The floor: the same answer columns as a two-class model, the same for every review."""

    def predict(self, context, model_input: pd.DataFrame, params=None) -> pd.DataFrame:
        rows = len(model_input)
        return pd.DataFrame(
            {"label": ["positive"] * rows, "positive_probability": 0.5, "known_share": 1.0}
        )


@dataclass
class Load:
    """What one load of one server gave."""

    seconds: float
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    cpu_ms: float = float("nan")  # the server's CPU per answered request

    @property
    def rate(self) -> float:
        return len(self.latencies) / self.seconds

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def served(model_uri: str, workers: int, log: Path):
    """``mlflow models serve`` of ``model_uri`` on a free port: its port and process."""
    port = free_port()
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    command = [sys.executable, "-m", "mlflow", "models", "serve", "-m", model_uri]
    command += ["--env-manager", "local", "--host", "127.0.0.1", "-p", str(port)]
    command += ["--workers", str(workers)]
    with log.open("wb") as output:
        server = subprocess.Popen(
            command, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + 180
        while True:
            if server.poll() is not None:
                sys.exit(f"serve_load: the server of {model_uri} exited: {log.read_text()[-2000:]}")
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(f"http://127.0.0.1:{port}/ping", timeout=2),
            ):
                break
            if time.monotonic() > deadline:
                sys.exit(f"serve_load: no answer from the server of {model_uri} in 180 s")
            time.sleep(0.5)
        yield port, server
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.wait(timeout=20)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGKILL)


def load(port: int, bodies: list[bytes], clients: int, seconds: float) -> Load:
    """``clients`` threads posting ``bodies`` in turn for ``seconds``; requests under way at
    the end are waited for and counted."""
    result = Load(seconds)
    lock = threading.Lock()
    start = threading.Barrier(clients + 1)
    deadline = [0.0]

    def client(first: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        index = first
        start.wait()
        while time.perf_counter() < deadline[0]:
            body = bodies[index % len(bodies)]
            index += clients
            began = time.perf_counter()
            try:
                connection.request(
                    "POST", "/invocations", body, {"Content-Type": "application/json"}
                )
                response = connection.getresponse()
                response.read()
                ok = response.status == 200
            except (OSError, http.client.HTTPException):
                ok = False
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            took = time.perf_counter() - began
            with lock:
                result.latencies.append(took)
                result.errors += not ok
        connection.close()

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for thread in threads:
        thread.start()
    began = time.perf_counter()
    deadline[0] = began + seconds
    start.wait()
    for thread in threads:
        thread.join()
    result.seconds = time.perf_counter() - began
    return result


def request_bodies(count: int, data_dir: str | None) -> dict[str, list[bytes]]:
    """One-review requests of the first ``count`` IMDB training reviews: their first sentence,
    and the whole review."""
    cfg = DataConfig(data_dir=data_dir, download=False)
    reviews = [
        text.decode("utf-8").replace("<br />", " ")
        for text, _ in tfds_load(f"train[:{count}]", cfg, as_supervised=True).as_numpy_iterator()
    ]
    sentences = [SENTENCE.split(review, maxsplit=1)[0] for review in reviews]
    return {
        "one sentence": [json.dumps({"inputs": [s]}).encode() for s in sentences],
        "full review": [json.dumps({"inputs": [r]}).encode() for r in reviews],
    }


def server_usage(server: subprocess.Popen) -> tuple[float, float]:
    """The CPU seconds (user and system) and the resident memory (MiB) of every process in the
    server's process group."""
    ticks = pages = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[2]) == server.pid:  # its process group
                ticks += int(fields[11]) + int(fields[12])
                pages += int((entry / "statm").read_text().split()[1])
    return ticks / os.sysconf("SC_CLK_TCK"), pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def measured(server: subprocess.Popen, port: int, bodies, clients: int, seconds: float) -> Load:
    """:func:`load`, with the server's CPU milliseconds per answered request."""
    before, _ = server_usage(server)
    result = load(port, bodies, clients, seconds)
    result.cpu_ms = 1000 * (server_usage(server)[0] - before) / max(len(result.latencies), 1)
    return result


def pinned(uri: str) -> str:
    """``models:/NAME@ALIAS`` as ``models:/NAME/VERSION`` (the version it names now)."""
    match = re.fullmatch(r"models:/([^/@]+)@(.+)", uri)
    if not match:
        return uri
    version = MlflowClient().get_model_version_by_alias(*match.groups())
    return f"models:/{match.group(1)}/{version.version}"


def compare(args, bodies: dict[str, list[bytes]], folder: Path) -> None:
    floor_path = folder / "floor"
    mlflow.pyfunc.save_model(
        str(floor_path),
        python_model=Constant(),
        signature=pyfunc_signature(("negative", "positive")),
        input_example=["A wonderful film."],
    )
    clients = [int(n) for n in args.clients.split(",")]
    print(f"## Served under load: `{args.model}` against a constant pyfunc model (the floor)")
    print()
    print(
        f"{cpu_model()}, {os.cpu_count()} cores; `mlflow models serve --workers {args.workers}` "
        f"for each; one review per request; {args.seconds:g} s per cell, the two servers loaded "
        "in turn; clients are threads of the benchmark on the same cores."
    )
    print()
    print(
        "| request | clients | model req/s | floor req/s | model / floor "
        "| model p50 ms | model p99 ms | floor p50 ms | floor p99 ms "
        "| server CPU ms/request (model, floor) | errors (model, floor) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    with (
        served(args.model, args.workers, folder / "model.log") as (model_port, model_server),
        served(str(floor_path), args.workers, folder / "floor.log") as (floor_port, floor_server),
    ):
        for requests in bodies.values():  # a warm-up of each server on each kind
            load(model_port, requests, 4, 1.0)
            load(floor_port, requests, 4, 1.0)
        for kind, requests in bodies.items():
            for n in clients:
                model = measured(model_server, model_port, requests, n, args.seconds)
                floor = measured(floor_server, floor_port, requests, n, args.seconds)
                print(
                    f"| {kind} | {n} | {model.rate:,.0f} | {floor.rate:,.0f} "
                    f"| {model.rate / floor.rate:.2f}x "
                    f"| {1000 * model.percentile(0.5):.1f} | {1000 * model.percentile(0.99):.1f} "
                    f"| {1000 * floor.percentile(0.5):.1f} | {1000 * floor.percentile(0.99):.1f} "
                    f"| {model.cpu_ms:.2f}, {floor.cpu_ms:.2f} | {model.errors}, {floor.errors} |",
                    flush=True,
                )


def soak(args, bodies: dict[str, list[bytes]], folder: Path) -> None:
    requests = bodies["one sentence"]
    clients = int(args.clients.split(",")[0])
    print(f"## Soak: `{args.model}`, {clients} clients for {args.soak:g} s")
    print()
    print(
        f"{cpu_model()}, {os.cpu_count()} cores; `mlflow models serve --workers {args.workers}`; "
        "one-sentence requests; memory: the RSS of the server's processes."
    )
    print()
    print("| seconds | requests/s | p99 ms | errors | server RSS MiB |")
    print("|---:|---:|---:|---:|---:|")
    errors, samples = 0, []
    with served(args.model, args.workers, folder / "model.log") as (port, server):
        load(port, requests, 4, 2.0)  # warm-up
        began = time.monotonic()
        while (elapsed := time.monotonic() - began) < args.soak:
            part = load(port, requests, clients, min(args.every, args.soak - elapsed))
            errors += part.errors
            samples.append(server_usage(server)[1])
            print(
                f"| {time.monotonic() - began:.0f} | {part.rate:,.0f} "
                f"| {1000 * part.percentile(0.99):.1f} | {part.errors} | {samples[-1]:.0f} |",
                flush=True,
            )
    print()
    print(
        f"errors: {errors}; server RSS {samples[0]:.0f} MiB at the first sample, "
        f"{samples[-1]:.0f} MiB at the last, {max(samples):.0f} MiB at most"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="models:/imdb-sentiment@newest")
    parser.add_argument("--seconds", type=float, default=10.0, help="of load per cell")
    parser.add_argument("--clients", default="1,16,64", help="numbers of clients, comma-separated")
    parser.add_argument("--workers", type=int, default=1, help="of each mlflow models serve")
    parser.add_argument("--reviews", type=int, default=2000, help="IMDB training reviews sent")
    parser.add_argument("--quick", action="store_true", help="3 s a cell")
    parser.add_argument("--soak", type=float, help="load the model alone this many seconds")
    parser.add_argument("--every", type=float, default=30.0, help="soak: seconds per sample")
    parser.add_argument("--data-dir", default=os.environ.get("TFDS_DATA_DIR"))
    args = parser.parse_args()
    if args.quick:
        args.seconds = 3.0
    os.environ.setdefault("MLFLOW_TRACKING_URI", f"sqlite:///{ROOT / 'mlflow.db'}")
    try:
        args.model = pinned(args.model)
    except mlflow.exceptions.MlflowException:
        sys.exit(
            f"serve_load: no model {args.model} in {os.environ['MLFLOW_TRACKING_URI']}: "
            "train one first (make train)"
        )
    bodies = request_bodies(args.reviews, args.data_dir)
    folder = Path(tempfile.mkdtemp(prefix="serve-load-"))
    try:
        (soak if args.soak else compare)(args, bodies, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()

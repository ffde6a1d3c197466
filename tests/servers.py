"""Servers the tests start: waiting for one (``mlflow server``, ``mlflow models serve``), and
the stack of ``make server`` (``scripts/server.sh``) with the environment it gives a worker."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def wait_until_answering(
    url: str, process: subprocess.Popen, log: Path, timeout: float, interval: float
) -> None:
    """Poll ``url`` until it answers 200; fail with the log's tail if the server exits first or
    does not answer within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            pytest.fail(f"the server exited:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        if time.monotonic() > deadline:
            pytest.fail(f"no answer from {url} within {timeout:.0f} s:\n{log.read_text()[-3000:]}")
        time.sleep(interval)


def worker_environment(printed: str) -> dict[str, str]:
    """The variables that the ``export`` lines ``scripts/server.sh start`` printed set, as bash
    sets them (a password is read from its file by the line's own ``$(cat FILE)``)."""
    exports = [line for line in printed.splitlines() if line.startswith("export ")]
    names = [line.removeprefix("export ").split("=", 1)[0] for line in exports]
    shell = "\n".join([*exports, 'for name in "$@"; do printf "%s\\0" "${!name}"; done'])
    values = subprocess.run(
        ["bash", "-c", shell, "bash", *names], capture_output=True, check=True
    ).stdout.decode()
    return dict(zip(names, values.split("\0")[:-1], strict=True))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Server:
    """What ``scripts/server.sh start`` made and printed."""

    folder: Path  # SERVER_DIR
    printed: str  # its standard output
    worker: dict[str, str]  # the variables its export lines set
    storage: str  # the --storage of its classify sweep line

    @property
    def tracking(self) -> str:
        return self.worker["MLFLOW_TRACKING_URI"]

    def env(self, **changes: str | None) -> dict[str, str]:
        """A worker's environment: this one's, then ``changes`` (None: unset)."""
        env = {**os.environ, **self.worker, "PYTHONUNBUFFERED": "1"}
        for name, value in changes.items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        return env


@contextlib.contextmanager
def started_server(**settings: str) -> Iterator[Server]:
    """``scripts/server.sh start`` (what ``make server`` runs) on free ports and a fresh folder
    that the ``postgres`` user can enter, with ``settings`` (HOST, ADDRESS) in its environment;
    stopped and removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="classify-server-"))
    folder.chmod(0o755)
    env = {
        **os.environ,
        "SERVER_DIR": str(folder),
        "PG_PORT": str(free_port()),
        "PORT": str(free_port()),
        "MLFLOW": str(Path(sys.executable).parent / "mlflow"),
        **settings,
    }
    for name in [name for name in env if name.startswith(("MLFLOW_TRACKING_", "PG"))]:
        if name != "PG_PORT":
            env.pop(name)
    script = str(ROOT / "scripts" / "server.sh")
    started = subprocess.run(
        [script, "start"], env=env, capture_output=True, text=True, timeout=400
    )
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        lines = started.stdout.splitlines()
        storage = next(line for line in lines if line.startswith("classify sweep SPEC --storage "))
        yield Server(
            folder, started.stdout, worker_environment(started.stdout), storage.split()[-1]
        )
    finally:
        subprocess.run([script, "stop"], env=env, capture_output=True, timeout=120)
        shutil.rmtree(folder, ignore_errors=True)

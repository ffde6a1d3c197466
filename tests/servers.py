"""Servers the tests start: waiting for one (``mlflow server``, ``mlflow models serve``), and
the stack of ``make server`` (``scripts/server.sh``) with the environment it gives a worker."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
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
    settings: dict[str, str]  # the environment scripts/server.sh ran in

    def classify(self, *args: str, **changes: str | None) -> subprocess.CompletedProcess:
        """``classify ARGS`` as a worker of this server runs it (``changes``: see :meth:`env`)."""
        return subprocess.run(
            [sys.executable, "-m", "classifier", *args],
            env=self.env(**changes),
            capture_output=True,
            text=True,
            timeout=120,
        )

    def script(self, command: str) -> None:
        """``scripts/server.sh start`` or ``stop``, on this server's folder and ports."""
        done = subprocess.run(
            [str(ROOT / "scripts" / "server.sh"), command],
            env=self.settings,
            capture_output=True,
            text=True,
            timeout=400,
        )
        assert done.returncode == 0, done.stdout + done.stderr

    def stop_mlflow(self) -> None:
        """Stop the MLflow server alone (its process group, as ``stop`` does)."""
        pid = int((self.folder / "mlflow.pid").read_text())
        os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                os.killpg(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.2)
        raise AssertionError("the MLflow server did not stop within 60 s")

    def stop_postgres(self) -> None:
        """``pg_ctl stop`` (fast: open connections are cut), as the postgres user;
        ``script("start")`` or :meth:`start_postgres` starts it again."""
        self._pg_ctl("-m", "fast", "-w", "stop")

    def start_postgres(self) -> None:
        """PostgreSQL alone started again as ``scripts/server.sh start`` starts it on
        127.0.0.1 (its port and socket folder), the MLflow server left as it is."""
        options = f"-p {self.settings['PG_PORT']} -c listen_addresses=127.0.0.1 "
        options += f"-c unix_socket_directories={self.folder / 'run'}"
        log = str(self.folder / "run" / "postgresql.log")
        self._pg_ctl("-l", log, "-w", "-t", "60", "start", "-o", options)

    def _pg_ctl(self, *args: str) -> None:
        bin_dir = sorted(Path("/usr/lib/postgresql").glob("*/bin"))[-1]
        command = [str(bin_dir / "pg_ctl"), "-D", str(self.folder / "pgdata"), *args]
        if os.getuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr

    @property
    def tracking(self) -> str:
        return self.worker["MLFLOW_TRACKING_URI"]

    def env(self, **changes: str | None) -> dict[str, str]:
        """A worker's environment: this one's, then ``changes`` (None: unset)."""
        env = {**os.environ, **self.worker, "PYTHONUNBUFFERED": "1"}
        env.pop("CLASSIFY_VERBOSE", None)  # set in this process by an in-process `classify -v`
        for name, value in changes.items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        return env


@contextlib.contextmanager
def started_server(artifact_disk_mb: int | None = None, **settings: str) -> Iterator[Server]:
    """``scripts/server.sh start`` (what ``make server`` runs) on free ports and a fresh folder
    that the ``postgres`` user can enter, with ``settings`` (LISTEN, ADDRESS, WORKERS) in its
    environment; stopped and removed afterwards. The MLflow server runs one worker process
    unless ``settings`` say otherwise: it answers a test's few workers on its threads, and each
    process more would import MLflow's server again on the cores the tests train on.
    ``artifact_disk_mb``: the artefacts on a disk of their own of that size (a tmpfs: the
    tests run as root), which a test may fill."""
    folder = Path(tempfile.mkdtemp(prefix="classify-server-"))
    folder.chmod(0o755)
    if artifact_disk_mb:
        (folder / "artifacts").mkdir()
        mount = ["mount", "-t", "tmpfs", "-o", f"size={artifact_disk_mb}m", "tmpfs"]
        subprocess.run([*mount, str(folder / "artifacts")], check=True)
    env = {
        **os.environ,
        "SERVER_DIR": str(folder),
        "PG_PORT": str(free_port()),
        "PORT": str(free_port()),
        "MLFLOW": str(Path(sys.executable).parent / "mlflow"),
        "WORKERS": "1",
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
            folder, started.stdout, worker_environment(started.stdout), storage.split()[-1], env
        )
    finally:
        subprocess.run([script, "stop"], env=env, capture_output=True, timeout=120)
        if artifact_disk_mb:
            subprocess.run(["umount", str(folder / "artifacts")], check=False)
        shutil.rmtree(folder, ignore_errors=True)


def wait_for_line(log: Path, pattern: str, worker: subprocess.Popen, after: int = 0) -> int:
    """The number of the first line from ``after`` on that matches ``pattern``."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        lines = log.read_text().splitlines()
        for number, line in enumerate(lines[after:], start=after):
            if re.search(pattern, line):
                return number
        assert worker.poll() is None, log.read_text()[-3000:]
        time.sleep(0.2)
    raise AssertionError(f"no line matching {pattern!r}:\n{log.read_text()[-3000:]}")

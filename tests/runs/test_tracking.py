"""The tracking store is checked before use: a fresh SQLite store is created once under a lock
(processes started together do not race in MLflow's migrations), an unreachable or non-MLflow
server fails within seconds, and a bad URI is one line naming it."""

from __future__ import annotations

import http.server
import multiprocessing
import os
import socket
import sqlite3
import threading
import time

import pytest
from click.testing import CliRunner

from classifier.cli.main import cli
from classifier.errors import TrackingError, UserError
from classifier.runs import tracking
from classifier.runs.tracking import configure_tracking

PROCESSES = 4


@pytest.fixture(autouse=True)
def _restore_mlflow_uris():
    """configure_tracking() points MLflow's globals at the test's store: point them back."""
    import mlflow

    saved = os.environ.get("MLFLOW_TRACKING_URI")
    yield
    mlflow.set_tracking_uri(saved)
    mlflow.set_registry_uri(saved)


def _start_together(uri: str, index: int, barrier, results) -> None:
    """One of PROCESSES fresh interpreters: wait for the others, then open the same fresh store
    and write to it."""
    os.environ["MLFLOW_TRACKING_URI"] = uri
    try:
        import mlflow

        barrier.wait(timeout=120)
        configure_tracking()
        experiment_id = tracking.ensure_experiment(f"together-{index}")
        with mlflow.start_run(experiment_id=experiment_id):
            mlflow.log_metric("index", index)
        tracking.ensure_experiment("together")  # one name for all (the workers of one sweep)
        results.put((index, "ok"))
    except BaseException as error:  # noqa: BLE001 - reported to the parent
        results.put((index, f"{type(error).__name__}: {str(error)[:300]}"))


def start_together(uri: str, processes: int = PROCESSES) -> dict[int, str]:
    """Run :func:`_start_together` in ``processes`` spawned interpreters; their outcomes."""
    context = multiprocessing.get_context("spawn")  # no fork of a process with threads
    barrier, results = context.Barrier(processes), context.Queue()
    workers = [
        context.Process(target=_start_together, args=(uri, index, barrier, results))
        for index in range(processes)
    ]
    for worker in workers:
        worker.start()
    outcomes = dict(results.get(timeout=300) for _ in workers)
    for worker in workers:
        worker.join(timeout=60)
    return outcomes


def test_processes_started_together_on_a_fresh_sqlite_store_all_succeed(tmp_path):
    db = tmp_path / "mlflow.db"
    outcomes = start_together(f"sqlite:///{db}")
    assert outcomes == {index: "ok" for index in range(PROCESSES)}
    with sqlite3.connect(db) as connection:
        names = {row[0] for row in connection.execute("SELECT name FROM experiments")}
        runs = connection.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    assert {"together", *(f"together-{index}" for index in range(PROCESSES))} <= names
    assert runs == PROCESSES
    assert (tmp_path / "mlflow.db.lock").is_file()  # left in place: removing it would race


def test_an_experiment_made_by_another_process_meanwhile_is_used(tmp_path, monkeypatch):
    """Two workers of a sweep both find no experiment; the second one's create fails with
    RESOURCE_ALREADY_EXISTS (an internal error once): it uses the experiment the first made."""
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    configure_tracking()
    first = tracking.ensure_experiment("sweep")  # the other worker, a moment earlier
    lookup = MlflowClient.get_experiment_by_name
    looks = []

    def looked_before_it_was_made(self, name):
        looks.append(name)
        return None if len(looks) == 1 else lookup(self, name)  # the first look: not yet

    monkeypatch.setattr(MlflowClient, "get_experiment_by_name", looked_before_it_was_made)
    assert tracking.ensure_experiment("sweep") == first
    assert looks == ["sweep", "sweep"]


def test_a_fresh_store_is_created_quietly_and_reopened(tmp_path, monkeypatch, capfd):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    assert configure_tracking() == uri
    assert (tmp_path / "mlflow.db").stat().st_size > 0
    assert configure_tracking() == uri
    assert "Creating initial MLflow database tables" not in capfd.readouterr().err


def test_a_lookup_in_a_store_that_does_not_exist_writes_nothing(tmp_path, monkeypatch):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    with pytest.raises(TrackingError) as raised:
        configure_tracking(absent="no run 'abc'")
    assert str(raised.value) == f"no run 'abc' in {uri}"
    assert list(tmp_path.iterdir()) == []


# --- servers that are not there, or not MLflow ----------------------------------------------


def closed_port() -> int:
    """A port nothing listens on: bound, then closed."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def http_server():
    """Start a tiny HTTP server on 127.0.0.1 answering every GET with (status, body); stopped
    by the test."""
    servers = []

    def start(status: int, body: bytes = b"nope") -> str:
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def timed_configure(monkeypatch, uri: str) -> tuple[str, float]:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    started = time.monotonic()
    with pytest.raises(TrackingError) as raised:
        configure_tracking()
    return str(raised.value), time.monotonic() - started


def test_a_closed_port_fails_in_seconds_with_one_line(monkeypatch):
    uri = f"http://127.0.0.1:{closed_port()}"
    message, seconds = timed_configure(monkeypatch, uri)
    assert seconds < 10
    assert message == (
        f"cannot reach the MLflow tracking server {uri} (MLFLOW_TRACKING_URI): connection refused"
    )


@pytest.mark.parametrize(
    "status, body, answer",
    [
        (404, b"nope", "404 Not Found"),
        (500, b"boom", "500 Internal Server Error"),
        (200, b"hi", "200 OK"),
    ],
)
def test_a_server_that_is_not_a_healthy_mlflow_fails_with_one_line(
    monkeypatch, http_server, status, body, answer
):
    uri = http_server(status, body)
    message, seconds = timed_configure(monkeypatch, uri)
    assert seconds < 10
    assert message == (
        f"the MLflow tracking server {uri} (MLFLOW_TRACKING_URI) answered GET /health with "
        f"{answer}, not 200 OK: is it an MLflow server?"
    )


def test_a_server_that_answers_ok_passes(monkeypatch, http_server):
    uri = http_server(200, b"OK")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    assert configure_tracking() == uri


@pytest.mark.parametrize(
    "args",
    [
        ["compare"],
        ["predict", "review.txt"],
        ["explain", "review.txt"],
        ["train", "--config", "configs/smoke.yaml"],
        ["sweep", "configs/sweeps/quick.yaml"],
        ["predict", "--model", "models:/imdb-sentiment@newest", "review.txt"],
    ],
)
def test_every_command_that_talks_to_mlflow_fails_fast_on_an_unreachable_server(monkeypatch, args):
    uri = f"http://127.0.0.1:{closed_port()}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.chdir(tracking.project_root())
    started = time.monotonic()
    result = CliRunner().invoke(cli, args, prog_name="classify")
    assert time.monotonic() - started < 10
    assert result.exit_code == 2, result.output
    assert result.output == (
        f"classify: error: cannot reach the MLflow tracking server {uri} (MLFLOW_TRACKING_URI): "
        "connection refused\n"
    )


# --- URIs that are not a usable store -------------------------------------------------------


def bad_store_message(monkeypatch, uri: str) -> str:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    with pytest.raises(TrackingError) as raised:
        configure_tracking()
    message = str(raised.value)
    assert "\n" not in message and uri in message
    return message


def test_an_unknown_scheme_is_one_line(monkeypatch):
    message = bad_store_message(monkeypatch, "foo://x")
    assert message.startswith("tracking store foo://x (MLFLOW_TRACKING_URI): ")
    assert "unsupported URI 'foo://x'" in message


def test_a_sqlite_store_in_a_missing_folder_is_one_line_and_creates_nothing(tmp_path, monkeypatch):
    folder = tmp_path / "no" / "such"
    message = bad_store_message(monkeypatch, f"sqlite:///{folder / 'mlflow.db'}")
    assert message.endswith(f": folder {folder} does not exist")
    assert not (tmp_path / "no").exists()


def test_a_sqlite_store_in_a_read_only_folder_is_one_line(tmp_path, monkeypatch):
    folder = tmp_path / "read-only"
    folder.mkdir(mode=0o555)
    if os.geteuid() == 0:  # root writes into read-only folders: refuse as the kernel would
        real_open = os.open

        def refuse(path, *args, **kwargs):
            if str(path).startswith(str(folder)):
                raise PermissionError(13, "Permission denied", str(path))
            return real_open(path, *args, **kwargs)

        monkeypatch.setattr(os, "open", refuse)
    message = bad_store_message(monkeypatch, f"sqlite:///{folder / 'mlflow.db'}")
    assert message.endswith(f"cannot create it, folder {folder} is not writable")
    assert list(folder.iterdir()) == []


def test_a_file_that_is_not_a_database_is_one_line(tmp_path, monkeypatch):
    path = tmp_path / "notes.txt"
    path.write_text("not a database\n" * 100)
    message = bad_store_message(monkeypatch, f"sqlite:///{path}")
    assert message.endswith("file is not a database")
    assert path.read_text() == "not a database\n" * 100


def test_the_old_file_store_is_one_line(tmp_path, monkeypatch):
    message = bad_store_message(monkeypatch, str(tmp_path / "mlruns"))
    assert "filesystem tracking backend" in message


def test_a_bad_store_ends_a_command_with_one_line(monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "foo://x")
    monkeypatch.chdir(tracking.project_root())
    result = CliRunner().invoke(cli, ["train", "--config", "configs/smoke.yaml"])
    assert result.exit_code == 2
    assert result.output.startswith("classify: error: tracking store foo://x (MLFLOW_TRACKING_URI)")
    assert result.output.count("\n") == 1


def test_tracking_error_is_a_user_error():
    assert issubclass(TrackingError, UserError) and TrackingError.exit_code == 2

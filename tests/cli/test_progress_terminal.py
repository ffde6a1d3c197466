"""Progress on long work: an updating status line on a terminal (the step under way, then the
batches of each epoch with the time left), and nothing of it where output is not a terminal."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys

from classifier.cli import terminal
from classifier.runs.live import BatchProgress, batch_progress, status
from tests.conftest import fixture_data_overrides

CLEAR = "\r\x1b[K"


def test_training_under_a_terminal_shows_its_steps_and_batches(tmp_path, fixture_data_dir):
    overrides = [
        *fixture_data_overrides(fixture_data_dir),
        "train.epochs=2",
        "train.early_stopping_patience=null",
        "train.refit=true",
        "train.registered_model=imdb-progress-test",
    ]
    sets = [arg for item in overrides for arg in ("--set", item)]
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path}/mlflow.db", "COLUMNS": "200"}
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "classifier", "train", *sets],
        stdout=follower,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the terminal's other end closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    stderr = process.communicate(timeout=300)[1].decode()
    assert process.returncode == 0, stderr
    assert stderr == ""  # only the project's own lines: no library's warnings or log lines
    shown = b"".join(chunks).decode().replace("\r\n", "\n")

    statuses = [part.split("\n")[0] for part in shown.split(CLEAR)[1:]]
    for step in (
        "loading the reviews",
        "building the vocabulary",
        "building the model",
        "logging the run's inputs to MLflow",
        "epoch  1/2  validating",
        "refit: building the vocabulary and the model",
        "evaluating on the test reviews",
        "logging the model to MLflow and registering it",
    ):
        assert step in statuses, (step, statuses)
    batches = [line for line in statuses if " batch " in line]
    assert any(line.startswith("epoch  2/2  batch ") for line in batches), statuses
    assert any(line.startswith("refit  1/2  batch ") for line in batches), statuses
    assert all(line.endswith("s left") for line in batches), batches
    # The lines themselves are the ones a log gets, each at the left margin.
    lines = [line.split(CLEAR)[-1] for line in shown.split("\n") if line.split(CLEAR)[-1]]
    assert lines[0].startswith("run ") and lines[-1].startswith("test accuracy ")
    assert [line.split()[1] for line in lines if line.startswith("epoch ")] == ["1/2", "2/2"]


def test_off_a_terminal_there_is_no_status_line(monkeypatch):
    stream = io.StringIO()  # a pipe or a log file: not a terminal
    monkeypatch.setattr(sys, "stdout", stream)
    echo = terminal.Progress()
    status(echo, "loading the reviews")
    echo("epoch  1/2")
    assert stream.getvalue() == "epoch  1/2\n"
    assert batch_progress(echo, "epoch", 2, reviews=100, batch_size=10) == []


def test_a_status_line_is_cleared_before_the_next_line(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Terminal()
    monkeypatch.setattr(sys, "stdout", stream)
    echo = terminal.Progress()
    status(echo, "loading the reviews")
    echo("run 1")
    terminal.clear_status()  # nothing shown any more: nothing written
    assert stream.getvalue() == f"{CLEAR}loading the reviews{CLEAR}run 1\n"
    [bar] = batch_progress(echo, "epoch", 2, reviews=100, batch_size=10)
    assert isinstance(bar, BatchProgress) and bar.batches == 10

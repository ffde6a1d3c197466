"""Inputs that cannot work are refused before TensorFlow loads: one line at once, not after the
seconds its import takes (on b2bae7f each of these waited for TensorFlow, about 10 s here)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# A model.keras written by b2bae7f (tests/serving/test_saved_before_the_move.py): the --model
# check passes, so the input is what is refused.
KERAS_MODEL = Path(__file__).parents[1] / "serving" / "data" / "before_the_move" / "model.keras"


def classify(*args: str, cwd: Path, close_stdin: bool = False) -> subprocess.CompletedProcess:
    # -v: TensorFlow's import is not silenced, so its -X importtime lines would show.
    command = [sys.executable, "-X", "importtime", "-m", "classifier", "-v", *args]
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{cwd / 'mlflow.db'}"}
    return subprocess.run(
        command,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        preexec_fn=(lambda: os.close(0)) if close_stdin else None,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def split(stderr: str) -> tuple[set[str], list[str]]:
    """The top-level packages imported (``-X importtime`` lines) and the other lines."""
    lines = stderr.splitlines()
    imported = {
        line.rsplit("|", 1)[-1].strip().split(".")[0]
        for line in lines
        if line.startswith("import time:")
    }
    return imported, [line for line in lines if not line.startswith("import time:")]


@pytest.fixture
def folder(tmp_path) -> Path:
    (tmp_path / "review.txt").write_text("A wonderful film.\n")
    (tmp_path / "notes.txt").write_text("not a model\n")
    (tmp_path / "empty").mkdir()
    os.mkfifo(tmp_path / "pipe")  # nobody writes to it: reading it would wait for ever
    return tmp_path


@pytest.mark.parametrize(
    ("args", "code", "line"),
    [
        (
            ["explain", "--model", str(KERAS_MODEL), "missing.txt"],
            1,
            "classify: missing.txt: no such file",
        ),
        (["explain", "--model", str(KERAS_MODEL), "empty"], 1, "classify: empty: is a directory"),
        (
            ["explain", "--model", "notes.txt", "review.txt"],
            2,
            "classify: error: --model notes.txt: not a loadable Keras model (neither a .keras "
            "zip archive nor HDF5)",
        ),
        (
            ["predict", "--model", "notes.txt", "review.txt"],
            2,
            "classify: error: --model notes.txt: not a loadable Keras model (neither a .keras "
            "zip archive nor HDF5)",
        ),
        (
            ["predict", "--model", "empty", "review.txt"],
            2,
            "classify: error: --model empty: a folder without a .keras model in it",
        ),
        (
            ["predict", "--model", "pipe", "review.txt"],
            2,
            "classify: error: --model pipe: not a regular file",
        ),
        (
            ["predict", "--model", "x" * 5000, "review.txt"],
            2,
            f"classify: error: --model {'x' * 5000}: cannot read it (File name too long)",
        ),
        (
            ["explain", "--model", "gone.keras", "review.txt"],
            2,
            "classify: error: --model gone.keras: no such file, and not an MLflow URI "
            "(models:/..., runs:/...)",
        ),
    ],
    ids=[
        "missing",
        "folder",
        "explain-not-a-model",
        "predict-not-a-model",
        "no-keras",
        "fifo",
        "name-too-long",
        "gone",
    ],
)
def test_refused_in_one_line_without_tensorflow(folder, args, code, line):
    done = classify(*args, cwd=folder)
    imported, lines = split(done.stderr)
    assert (done.returncode, lines) == (code, [line])
    assert "tensorflow" not in imported and "keras" not in imported


def test_explain_of_a_closed_stdin_is_refused_without_tensorflow(folder):
    done = classify("explain", "--model", str(KERAS_MODEL), "-", cwd=folder, close_stdin=True)
    imported, lines = split(done.stderr)
    assert (done.returncode, lines) == (1, ["classify: <stdin>: standard input is closed"])
    assert "tensorflow" not in imported

"""The standard streams and the top-level handler (:mod:`classifier.cli.terminal`): the four
families of issue #30, each with the case found by hand on b2bae7f, in a fresh process."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from classifier.cli import terminal
from classifier.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "tests" / "serving" / "data" / "before_the_move" / "bundle"


def classify(*args, close=(), stdout=subprocess.PIPE, cwd=None, env=None, shell=None):
    """``python -X importtime -m classifier ARGS`` with file descriptors ``close`` closed.

    Returns ``(exit code, stdout, stderr lines without importtime's, imported modules)``."""
    environment = {
        **os.environ,
        "MLFLOW_TRACKING_URI": "sqlite:////nonexistent/m.db",
        **(env or {}),
    }

    def close_streams():
        for descriptor in close:
            os.close(descriptor)

    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "classifier", *args],
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=300,
        env=environment,
        cwd=cwd or ROOT,
        preexec_fn=close_streams if close else None,
    )
    lines = done.stderr.splitlines()
    imported = {line.split("|")[-1].strip() for line in lines if line.startswith("import time:")}
    others = [line for line in lines if not line.startswith("import time:")]
    return done.returncode, done.stdout, others, imported


@pytest.fixture
def review(tmp_path) -> Path:
    path = tmp_path / "review.txt"
    path.write_text("A wonderful film, the cast is great.\n")
    return path


def test_a_file_is_classified_with_standard_input_closed(review):
    # b2bae7f: a 25-line RuntimeError from click.get_binary_stream("stdin"), opened eagerly
    code, out, err, _ = classify("predict", "--model", str(BUNDLE), str(review), close=[0])
    assert (code, err) == (0, [])
    assert out == classify("predict", "--model", str(BUNDLE), str(review))[1]  # stdin open
    assert out.splitlines()[1].split()[:2] == ["positive", "0.9962"]


def test_reading_a_closed_standard_input_is_one_line_about_that_input(review):
    code, out, err, _ = classify("predict", "--model", str(BUNDLE), "-", str(review), close=[0])
    assert code == 1
    assert err == ["classify: <stdin>: standard input is closed"]
    assert len(out.splitlines()) == 2  # the header and the file's row


def test_a_full_disk_is_one_line_and_exit_1(review):
    # b2bae7f: an OSError traceback
    with open("/dev/full", "w") as full:
        code, _, err, _ = classify("predict", "--model", str(BUNDLE), str(review), stdout=full)
    assert code == 1
    assert err == ["classify: error: cannot write the output: No space left on device"]


def test_a_closed_standard_output_is_one_line_and_exit_1(review):
    code, _, err, _ = classify("predict", "--model", str(BUNDLE), str(review), close=[1])
    assert code == 1
    assert err == ["classify: error: cannot write the output: standard output is closed"]


def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path):
    many = tmp_path / "many.txt"
    many.write_text("A wonderful film.\n" * 5000)
    done = subprocess.run(
        f"{sys.executable} -m classifier predict --per-line --model {BUNDLE} {many} | head -1; "
        'exit "${PIPESTATUS[0]}"',
        shell=True,
        executable="/bin/bash",
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.split() == ["label", "P(positive)", "known", "source"]


@pytest.mark.parametrize(
    "model, line",
    [
        (
            "http://host/model.keras",
            "--model 'http://host/model.keras': unsupported scheme 'http:'; give a local path, "
            "models:/NAME@ALIAS, models:/NAME/VERSION or runs:/RUN_ID",
        ),
        (
            "s3://bucket/model",
            "--model 's3://bucket/model': unsupported scheme 's3:'; give a local path, "
            "models:/NAME@ALIAS, models:/NAME/VERSION or runs:/RUN_ID",
        ),
        (
            "runs:/xyz",
            "--model 'runs:/xyz': not a runs:/ URI; give a local path, models:/NAME@ALIAS, "
            "models:/NAME/VERSION or runs:/RUN_ID",
        ),
    ],
)
def test_a_model_uri_of_another_scheme_is_one_line_before_anything_is_imported(review, model, line):
    # b2bae7f: a 52-line ValueError from MLflow's artifact code
    for command in ("predict", "explain"):
        code, _, err, imported = classify(command, "--model", model, str(review))
        assert (code, err) == (2, [f"classify: error: {line}"])
        assert not {"tensorflow", "mlflow"} & imported


def test_a_store_uri_of_another_scheme_is_one_line_before_mlflow_is_imported():
    code, _, err, imported = classify("compare", env={"MLFLOW_TRACKING_URI": "ftp://host/x"})
    assert code == 2
    assert err == [
        "classify: error: tracking store ftp://host/x (MLFLOW_TRACKING_URI): unsupported URI "
        "'ftp://host/x'; give sqlite:///PATH, http(s)://HOST:PORT or "
        "postgresql://USER@HOST/DATABASE"
    ]
    assert "mlflow" not in imported


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN"])
@pytest.mark.parametrize("command", ["predict", "explain"])
def test_a_threshold_that_is_not_finite_is_a_usage_error(review, command, value):
    # b2bae7f: nan gave exit 0 and 'negative' beside P(positive) 1.0000
    code, out, err, _ = classify(command, "--model", str(BUNDLE), "--threshold", value, str(review))
    assert (code, out) == (2, "")
    assert err == [
        f"Usage: classify {command} [OPTIONS] {'FILE...' if command == 'predict' else 'FILE'}",
        f"Error: Invalid value for '--threshold': {value!r} is not a finite number in 0.0<=x<=1.0",
    ]


def test_a_bug_is_one_line_and_exit_1_with_the_traceback_under_v(tmp_path, monkeypatch):
    from classifier.sweeps import spec

    def broken(path):
        raise RuntimeError("the spec reader broke\nsecond line")

    monkeypatch.setattr(spec, "load_spec", broken)
    monkeypatch.delenv("CLASSIFY_VERBOSE", raising=False)
    result = CliRunner().invoke(cli, ["sweep", "x.yaml"], prog_name="classify")
    assert result.exit_code == 1
    assert result.output == (
        "classify: internal error: RuntimeError: the spec reader broke "
        "(run with -v for the traceback)\n"
    )
    verbose = CliRunner().invoke(cli, ["-v", "sweep", "x.yaml"], prog_name="classify")
    assert verbose.exit_code == 1
    assert "Traceback (most recent call last)" in verbose.output
    assert verbose.output.splitlines()[-1].startswith("classify: internal error: RuntimeError")


def _full_disk(filename: str) -> OSError:
    return OSError(errno.ENOSPC, "No space left on device", filename)


def _behind_mlflow() -> Exception:
    """How MLflow reports a failed artifact download: one MlflowException whose message alone
    keeps the OSError (seen when logging a model filled the disk during `classify train`)."""
    from mlflow.exceptions import MlflowException

    return MlflowException(
        "The following failures occurred while downloading one or more artifacts from "
        "/data/mlruns/1/abc/artifacts:\n##### File model.keras #####\n"
        "[Errno 28] No space left on device: '/tmp/x/model.keras'"
    )


def _chained() -> Exception:
    error = RuntimeError("saving the checkpoint failed")
    error.__cause__ = _full_disk("/data/ckpt")  # what `raise ... from` sets
    return error


@pytest.mark.parametrize(
    ("error", "where"),
    [
        (lambda: _full_disk("/data/mlruns/model.keras"), " writing /data/mlruns/model.keras"),
        (_behind_mlflow, ""),
        (_chained, " writing /data/ckpt"),
    ],
    ids=["oserror", "behind-mlflow", "chained"],
)
def test_a_full_disk_is_one_line_not_an_internal_error(monkeypatch, error, where):
    from classifier.sweeps import spec

    def full(path):
        raise error()

    monkeypatch.setattr(spec, "load_spec", full)
    result = CliRunner().invoke(cli, ["sweep", "x.yaml"], prog_name="classify")
    assert result.exit_code == 1
    assert result.output == (
        f"classify: error: the disk is full (No space left on device{where}): free some space "
        "and run it again (a stopped training run continues with classify train --resume)\n"
    )


def test_usage_errors_are_two_lines():
    result = CliRunner().invoke(cli, ["compare", "--bogus"], prog_name="classify")
    assert result.exit_code == 2
    assert result.output.splitlines() == [
        "Usage: classify compare [OPTIONS]",
        "Error: No such option '--bogus'.",
    ]


def test_progress_lines_stop_with_one_warning_when_standard_output_cannot_take_them(
    monkeypatch, capsys
):
    monkeypatch.setattr(sys, "stdout", None)
    echo = terminal.Progress()
    echo("epoch 1/3")
    echo("epoch 2/3")
    assert capsys.readouterr().err == (
        "classify: warning: progress lines dropped (cannot write the output: standard output "
        "is closed)\n"
    )

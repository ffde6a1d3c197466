"""The ``classify`` command line: help, the data command, one-line errors with exit code 2."""

from __future__ import annotations

import subprocess
import sys

from click.testing import CliRunner

from classifier.cli import cli


def run(*args: str):
    return CliRunner().invoke(cli, list(args), prog_name="classify")


def test_help_lists_commands_and_examples():
    result = run("--help")
    assert result.exit_code == 0
    assert "Usage: classify [OPTIONS] COMMAND" in result.output
    assert "data" in result.output and "Examples:" in result.output
    sub = run("data", "--help")
    assert sub.exit_code == 0 and "Example:" in sub.output and "--data-dir" in sub.output


def test_console_script_is_installed_and_runs():
    # The real entry point, in a fresh process: `python -m classifier` mirrors `classify`.
    done = subprocess.run(
        [sys.executable, "-m", "classifier", "--help"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Usage: classify [OPTIONS] COMMAND")


def test_data_command_on_fixture(fixture_overrides):
    sets = [arg for item in fixture_overrides for arg in ("--set", item)]
    result = run("data", *sets)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert (
        lines[0]
        == "IMDB reviews (TFDS imdb_reviews); TFDS splits: train 160, test 80, unsupervised 10"
    )
    assert lines[1] == "training = train[:120], validation = train[120:160], test = test[:80]"
    assert lines[3].split() == [
        "split",
        "reviews",
        "negative",
        "positive",
        "words",
        "p50",
        "p90",
        "p99",
        "max",
    ]
    assert lines[4].split()[:4] == ["train", "120", "60", "60"]
    assert lines[5].split()[:4] == ["validation", "40", "20", "20"]
    assert lines[6].split()[:4] == ["test", "80", "40", "40"]
    assert lines[7].split()[:2] == ["unsupervised", "10"]
    assert lines[9] == "Example (first training review, negative):"


def test_missing_data_is_one_line_and_exit_2(tmp_path):
    result = CliRunner().invoke(
        cli, ["data", "--data-dir", str(tmp_path / "none"), "--set", "data.download=false"]
    )
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "classify: error: IMDB data (imdb_reviews) not found"
    )
    assert "TFDS_DATA_DIR" in lines[0] and "--data-dir" in lines[0]


def test_bad_config_is_one_line_and_exit_2(tmp_path):
    result = run("data", "--set", "model.num_heads=3")
    assert result.exit_code == 2
    assert result.output == (
        "classify: error: model.embed_dim=16 is not divisible by model.num_heads=3\n"
    )
    result = run("data", "--config", str(tmp_path / "missing.yaml"))
    assert result.exit_code == 2
    assert result.output == f"classify: error: config file not found: {tmp_path / 'missing.yaml'}\n"

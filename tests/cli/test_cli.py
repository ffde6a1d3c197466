"""The ``classify`` command line: help, the data command, one-line errors with exit code 2."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from classifier.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str):
    return CliRunner().invoke(cli, list(args), prog_name="classify")


def test_help_lists_commands_and_examples():
    result = run("--help")
    assert result.exit_code == 0
    assert "Usage: classify [OPTIONS] COMMAND" in result.output
    assert "data" in result.output and "Examples:" in result.output
    sub = run("data", "--help")
    assert sub.exit_code == 0 and "Examples:" in sub.output and "--data-dir" in sub.output
    assert "--data PATH" in sub.output


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


# --- bad input is caught before the slow imports, and writes nothing -------------------------

RUN_ID = "0123456789abcdef0123456789abcdef"


def run_classify(*args: str, env: dict[str, str] | None = None, cwd=None):
    """``python -X importtime -m classifier ARGS`` (the console script) in a fresh process.

    Returns ``(exit code, stdout, stderr lines without the importtime ones, imported modules)``.
    TensorFlow's import is only listed with ``-v``: without it, stderr is muted while it runs.
    """
    environment = {**os.environ, **(env or {})}
    environment.pop("TF_CPP_MIN_LOG_LEVEL", None)  # as a user's shell has it
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "classifier", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=environment,
        cwd=cwd or ROOT,
    )
    lines = done.stderr.splitlines()
    imported = {line.split("|")[-1].strip() for line in lines if line.startswith("import time:")}
    others = [line for line in lines if not line.startswith("import time:")]
    return done.returncode, done.stdout, others, imported


@pytest.mark.parametrize("value", ["", "  ", "3f2a9c0d", "3F2A9C0D1E6B4A7F8C5D2E1F0A9B8C7D"])
def test_resume_needs_a_run_id_before_anything_is_imported(tmp_path, value):
    # An empty --resume (an unset shell variable) once started a new full-data training.
    code, _, stderr, imported = run_classify(
        "-v", "train", "--resume", value, env={"MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path}/m.db"}
    )
    assert code == 2
    assert stderr[0] == "Usage: classify train [OPTIONS]"
    assert stderr[-1] == (
        f"Error: Invalid value for '--resume': {value!r} is not an MLflow run id "
        "(32 lowercase hex digits)"
    )
    assert not {"tensorflow", "mlflow"} & imported
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "args, option, message",
    [
        (
            ["compare", "--sweep", ""],
            "--sweep",
            "'' is not an MLflow run id (32 lowercase hex digits)",
        ),
        (
            ["compare", "--sweep", "latest"],
            "--sweep",
            "'latest' is not an MLflow run id (32 lowercase hex digits)",
        ),
        (["compare", "--experiment", ""], "--experiment", "must not be empty"),
        (["predict", "--model", "", "review.txt"], "--model", "must not be empty"),
        (["explain", "--model", " ", "review.txt"], "--model", "must not be empty"),
        (["explain", "-o", "", "review.txt"], "-o' / '--output", "must not be empty"),
        (["data", "--config", ""], "--config", "must not be empty"),
        (
            ["sweep", "configs/sweeps/quick.yaml", "--threads", "0"],
            "--threads",
            "0 is not in the range 1<=x<=1024.",
        ),
        (["train", "--data-dir", ""], "--data-dir", "must not be empty"),
    ],
)
def test_empty_or_malformed_values_are_usage_errors(tmp_path, monkeypatch, args, option, message):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert result.output.splitlines()[-1] == f"Error: Invalid value for '{option}': {message}"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "args, line",
    [
        (
            ["data", "--set", "data.foo=1"],
            "classify: error: unknown config key 'data.foo'; data takes batch_size, "
            "bucket_by_length, data_dir, download, extra, extra_label_map, label_field, label_map, "
            "labels, negation_phrases, phrases, "
            "sentences, sequence_length, source, spelling, test, test_fraction, test_size, "
            "text_field, "
            "train_size, truncate, "
            "val_size, validation, validation_fraction, vocab_size",
        ),
        (
            ["train", "--set", "train.epochs=abc"],
            "classify: error: train.epochs must be int, got str 'abc'",
        ),
    ],
)
def test_a_bad_config_is_one_line_before_tensorflow_is_imported(tmp_path, args, line):
    env = {"MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path}/m.db"}
    for verbose in ([], ["-v"]):  # -v: TensorFlow's import would be listed, and its log lines
        code, stdout, stderr, imported = run_classify(*verbose, *args, env=env)
        assert (code, stdout, stderr) == (2, "", [line])
        assert "classifier.config.schema" in imported  # importtime works
        assert not {"tensorflow", "keras", "mlflow"} & imported
    assert list(tmp_path.iterdir()) == []


def test_no_model_found_writes_no_store(tmp_path, monkeypatch, reviews):
    # The default store: mlflow.db in the project root, here a temporary one.
    from classifier.runs import store_paths

    root = tmp_path / "project"
    root.mkdir()
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setattr(store_paths, "project_root", lambda: root)
    result = run("predict", str(reviews["pos"]))
    assert result.exit_code == 2
    assert result.output.startswith(
        f"classify: error: no model found: the tracking store sqlite:///{root}/mlflow.db "
        "does not exist; train one with `classify train`"
    )
    assert result.output.count("\n") == 1
    assert list(root.iterdir()) == []


@pytest.mark.parametrize(
    "args, line",
    [
        (["compare"], "no experiment 'imdb-classifier' in {uri}"),
        (["compare", "--experiment", "x"], "no experiment 'x' in {uri}"),
        (["compare", "--sweep", RUN_ID], f"no run '{RUN_ID}' in {{uri}}"),
        (["train", "--resume", RUN_ID], f"no run '{RUN_ID}' in {{uri}}"),
        (
            ["predict", "--model", "models:/imdb-sentiment/1", "review.txt"],
            "--model models:/imdb-sentiment/1: the tracking store {uri} does not exist",
        ),
        (
            ["explain", "--model", f"runs:/{RUN_ID}", "review.txt"],
            f"--model runs:/{RUN_ID}: the tracking store {{uri}} does not exist",
        ),
    ],
)
def test_lookups_in_a_store_that_does_not_exist_write_nothing(tmp_path, monkeypatch, args, line):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert result.output.startswith("classify: error: " + line.format(uri=uri))
    assert result.output.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_an_unreachable_server_is_one_line_within_seconds():
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        uri = f"http://127.0.0.1:{sock.getsockname()[1]}"
    started = time.monotonic()
    code, stdout, stderr, _ = run_classify("compare", env={"MLFLOW_TRACKING_URI": uri})
    # Before: about 4 minutes of retries, then a traceback. Now: the import of mlflow and one
    # refused connection (a generous bound: the machine may be busy).
    assert time.monotonic() - started < 30
    assert (code, stdout) == (2, "")
    assert stderr == [
        f"classify: error: cannot reach the MLflow tracking server {uri} (MLFLOW_TRACKING_URI): "
        "connection refused"
    ]


# --- TensorFlow's own log lines ----------------------------------------------------------------


def test_only_the_projects_output_unless_verbose(fixture_overrides):
    sets = [arg for item in fixture_overrides for arg in ("--set", item)]
    code, stdout, stderr, imported = run_classify("data", *sets)
    assert code == 0 and stdout.startswith("IMDB reviews (TFDS imdb_reviews)")
    assert "classifier.data.pipeline" in imported
    # The IMDB builder alone: TFDS's registry would import every data set's (0.3 s).
    assert "tensorflow_datasets.datasets.imdb_reviews.imdb_reviews_dataset_builder" in imported
    assert "tensorflow_datasets.text" not in imported
    assert stderr == []  # no oneDNN, absl or cpu_feature_guard lines
    for verbose in (["-v"], ["--verbose"]):
        code, _, stderr, _ = run_classify(*verbose, "data", *sets)
        assert code == 0 and any(TF_LOG_LINE.match(line) for line in stderr), stderr
    code, _, stderr, _ = run_classify("data", *sets, env={"CLASSIFY_VERBOSE": "1"})
    assert code == 0 and any(TF_LOG_LINE.match(line) for line in stderr), stderr


TF_LOG_LINE = re.compile(r"^[IWE]\d{4} ")  # absl's format: I0000 00:00:... port.cc:153] ...


def test_tensorflow_logs_errors_only_when_verbose(monkeypatch):
    # TF_CPP_MIN_LOG_LEVEL=3 also hides training's "E0000 ... use_unbounded_threadpool" lines.
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "0")
    monkeypatch.setenv("CLASSIFY_VERBOSE", "0")  # restored (unset) after the test: -v sets it
    assert run("data", "--help").exit_code == 0
    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "3"
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "0")
    assert run("-v", "data", "--help").exit_code == 0
    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "0"
    assert os.environ["CLASSIFY_VERBOSE"] == "1"


@pytest.mark.parametrize("command", ["predict", "explain", "evaluate"])
def test_the_help_of_model_offers_a_bundle_folder(command):
    # a bundle serves each of them: explain reads the weights and attention model it holds
    assert "a run's LiteRT bundle folder" in " ".join(run(command, "--help").output.split())


def test_threads_limits_tensorflow_to_that_many_threads():
    """``classify sweep --threads 1`` (two workers on one 2-core machine): TensorFlow's thread
    pools are set before its first op, which then runs."""
    script = (
        "from classifier.cli.startup import import_tensorflow\n"
        "import_tensorflow(threads=1)\n"
        "import tensorflow as tf\n"
        "threading = tf.config.threading\n"
        "print(float(tf.reduce_sum(tf.ones(3))), threading.get_intra_op_parallelism_threads(),"
        " threading.get_inter_op_parallelism_threads())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True
    )
    assert done.stdout.split() == ["3.0", "1", "1"]


def test_every_option_names_its_value_in_words():
    # --threshold showed FINITE FLOAT RANGE, --batch-size INTEGER RANGE: click's type names.
    for name, command in cli.commands.items():
        help_text = CliRunner().invoke(cli, [name, "--help"], prog_name="classify").output
        options = [line for line in help_text.splitlines() if line.lstrip().startswith("-")]
        for line in options:
            assert not re.search(r"\b(FLOAT|INTEGER|RANGE|TEXT|BOOLEAN)\b", line), (name, line)
        assert command.params, name


@pytest.fixture
def trained_configs(monkeypatch) -> list:
    """The configs ``classify train`` would train, collected instead of trained."""
    trained: list = []
    monkeypatch.setattr("classifier.training.train.train", lambda cfg, **_: trained.append(cfg))
    return trained


def test_train_on_a_file_without_a_config_trains_the_shipped_recipe(
    store, tmp_path, trained_configs
):
    """``classify train --data FILE`` trains what ``make train`` ships (configs/train.yaml);
    ``--set model.variant=...`` still picks a variant on the built-in defaults."""
    from classifier.config.schema import load_config
    from tests.labelled_helpers import labelled_rows, write_csv

    trained = trained_configs
    path = write_csv(tmp_path / "reviews.csv", labelled_rows(60))
    result = run("train", "--data", str(path), "--set", "train.registered_model=mine")
    assert result.exit_code == 0, result.output
    assert result.output == (
        "classify: note: training the recipe make train ships (configs/train.yaml) without its "
        "data.extra (IMDB's added texts); --config or --set model.variant=... chooses another\n"
    )
    shipped = load_config(
        ROOT / "configs" / "train.yaml",
        ["train.registered_model=mine", f"data.source={path}", "data.extra=null"]
        + ["data.extra_label_map=null"],
    )
    assert trained == [shipped]
    assert (shipped.model.variant, shipped.model.negation, shipped.data.sentences) == (
        "nbow", 1.0, True,
    )  # fmt: skip

    result = run("train", "--data", str(path), "--set", "model.variant=mha")
    assert result.exit_code == 0, result.output
    assert trained[1] == load_config(
        None,
        ["model.variant=mha", f"data.source={path}", "train.registered_model=reviews-classifier"],
    )


def test_a_file_trained_without_a_name_registers_under_its_own(store, tmp_path, trained_configs):
    """Left at IMDB's name, a model of your file would become what ``classify predict`` serves
    for IMDB: it is registered under the file's name instead, and the note says how to use it."""
    from tests.labelled_helpers import labelled_rows, write_csv

    trained = trained_configs
    path = write_csv(tmp_path / "my reviews.csv", labelled_rows(60))
    result = run("train", "--data", str(path), "--config", "configs/variants/attention.yaml")
    assert result.exit_code == 0, result.output
    assert result.output == (
        "classify: note: registering the model as my-reviews-classifier, not as IMDB's model; "
        "classify predict --model models:/my-reviews-classifier@newest uses it\n"
    )
    assert trained[0].train.registered_model == "my-reviews-classifier"
    # A name given, or a config's own (smoke.yaml's imdb-sentiment-smoke), is kept.
    for named in ("train.registered_model=imdb-sentiment", "train.registered_model=mine"):
        result = run("train", "--data", str(path), "--set", named)
        assert trained[-1].train.registered_model == named.split("=")[1], result.output
        assert "registering" not in result.output
    result = run("train", "--data", str(path), "--config", "configs/smoke.yaml")
    assert result.exit_code == 0 and result.output == "", result.output
    assert trained[-1].train.registered_model == "imdb-sentiment-smoke"

"""``classify predict`` and ``classify explain`` with a tiny model trained here on fixture data.

One model is trained per module into a temporary MLflow store and registered under the default
name, so the commands find it without ``--model``. Covers every output format, every bad input
and its exit code, every way to name a model, the attention figure of every variant, and a real
``mlflow models serve`` answering ``POST /invocations``.
"""

from __future__ import annotations

import contextlib
import csv
import gc
import io
import json
import os
import signal
import socket
import subprocess
import sys
import time
import tracemalloc
import urllib.error
import urllib.request
import weakref
from pathlib import Path

import keras
import mlflow
import numpy as np
import pytest
import tensorflow as tf
from click.testing import CliRunner
from mlflow.tracking import MlflowClient

from classifier import predict as predict_module
from classifier.cli import cli
from classifier.config import ModelConfig, load_config
from classifier.data import ReviewVectorizer
from classifier.explain import attention_received, explain_text
from classifier.models.classifier import build_classifier, build_end_to_end
from classifier.predict import (
    DEFAULT_MODEL_NAME,
    Reporter,
    Review,
    load_keras_model,
    predict_texts,
    read_reviews,
)
from classifier.train import train
from tests.conftest import fixture_data_overrides

POSITIVE = "a great and wonderful film, superb. loved it, brilliant and moving"
NEGATIVE = "awful, boring and dull. a terrible waste, i hated the plot"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
BIG = 50 * 1024 * 1024


@pytest.fixture(scope="module")
def trained(store, fixture_data_dir):
    """A tiny encoder trained on the fixture reviews, registered as ``imdb-sentiment``."""
    cfg = load_config(
        None,
        [
            *fixture_data_overrides(fixture_data_dir),
            "model.variant=encoder",
            "model.num_layers=1",
            "train.epochs=4",
            "train.learning_rate=0.01",
            f"train.registered_model={DEFAULT_MODEL_NAME}",
            "experiment=predict-tests",
        ],
    )
    return train(cfg, echo=lambda line: None)


@pytest.fixture(scope="module")
def keras_file(trained, tmp_path_factory) -> Path:
    """The run's ``model.keras``, downloaded."""
    target = tmp_path_factory.mktemp("model")
    return Path(
        mlflow.artifacts.download_artifacts(
            run_id=trained.run_id, artifact_path="model.keras", dst_path=str(target)
        )
    )


@pytest.fixture(scope="module")
def model(keras_file):
    return load_keras_model(keras_file)


@pytest.fixture
def reviews(tmp_path) -> dict[str, Path]:
    files = {"pos": POSITIVE, "neg": NEGATIVE}
    paths = {}
    for name, text in files.items():
        paths[name] = tmp_path / f"{name}.txt"
        paths[name].write_text(text + "\n")
    paths["lines"] = tmp_path / "lines.txt"
    paths["lines"].write_text(f"{NEGATIVE}\n\n{POSITIVE}\r\n{NEGATIVE}")  # line 2 is blank
    return paths


def run(*args: str, stdin: bytes | None = None):
    result = CliRunner().invoke(cli, list(args), input=stdin, prog_name="classify")
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result


def err_lines(result) -> list[str]:
    return result.stderr.splitlines()


def table_rows(result) -> list[list[str]]:
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["label", "P(positive)", "source"]
    return [line.split(maxsplit=2) for line in lines[1:]]


# --- output formats --------------------------------------------------------------------------


def test_table_with_the_default_model(trained, reviews):
    result = run("predict", str(reviews["pos"]), str(reviews["neg"]))
    assert result.exit_code == 0, result.output
    rows = table_rows(result)
    assert [(label, source) for label, _, source in rows] == [
        ("positive", str(reviews["pos"])),
        ("negative", str(reviews["neg"])),
    ]
    assert float(rows[0][1]) > 0.5 > float(rows[1][1])
    assert result.stderr == ""


def test_json_per_line_sources_and_probabilities(trained, model, reviews):
    result = run("predict", "--per-line", "--format", "json", str(reviews["lines"]))
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    lines = str(reviews["lines"])
    assert [row["source"] for row in rows] == [f"{lines}:1", f"{lines}:3", f"{lines}:4"]
    assert [row["label"] for row in rows] == ["negative", "positive", "negative"]
    expected = predict_texts(model, [NEGATIVE, POSITIVE, NEGATIVE])
    assert [row["positive_probability"] for row in rows] == pytest.approx(expected, abs=1e-6)
    assert set(rows[0]) == {"source", "label", "positive_probability"}


def test_csv_and_stdin(trained, reviews):
    text = f"{POSITIVE}\n{NEGATIVE}\n".encode()
    result = run("predict", "--format", "csv", "--per-line", "-", stdin=text)
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [(r["source"], r["label"]) for r in rows] == [
        ("<stdin>:1", "positive"),
        ("<stdin>:2", "negative"),
    ]
    whole = run("predict", "--format", "csv", "-", str(reviews["neg"]), stdin=POSITIVE.encode())
    rows = list(csv.DictReader(io.StringIO(whole.stdout)))
    assert [(r["source"], r["label"]) for r in rows] == [
        ("<stdin>", "positive"),
        (str(reviews["neg"]), "negative"),
    ]


def test_a_source_with_a_comma_is_quoted_in_csv(trained, tmp_path):
    path = tmp_path / "a, b.txt"
    path.write_text(POSITIVE)
    rows = list(csv.DictReader(io.StringIO(run("predict", "--format", "csv", str(path)).stdout)))
    assert rows[0]["source"] == str(path)


def test_threshold_and_batch_size(trained, reviews):
    args = ["predict", "--per-line", "--format", "json", str(reviews["lines"])]
    default = json.loads(run(*args).stdout)
    assert json.loads(run(*args, "--batch-size", "1").stdout) == default
    everything = json.loads(run(*args, "--threshold", "0").stdout)
    assert {row["label"] for row in everything} == {"positive"}
    top = max(row["positive_probability"] for row in default)
    nothing = json.loads(run(*args, "--threshold", str(min(1.0, top + 1e-3))).stdout)
    assert {row["label"] for row in nothing} == {"negative"}


def test_many_reviews_in_batches_keep_their_order(trained, tmp_path):
    path = tmp_path / "many.txt"
    path.write_text("".join(f"{POSITIVE if i % 3 else NEGATIVE} {i}\n" for i in range(700)))
    result = run("predict", "--per-line", "--format", "csv", "--batch-size", "64", str(path))
    assert result.exit_code == 0
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [r["source"] for r in rows] == [f"{path}:{i + 1}" for i in range(700)]
    assert [r["label"] == "positive" for r in rows] == [bool(i % 3) for i in range(700)]


def test_help_has_examples():
    for command in ("predict", "explain"):
        result = run(command, "--help")
        assert result.exit_code == 0 and "Example" in result.output
        assert "--model" in result.output


# --- naming a model --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    [
        "models:/{name}@newest",
        "models:/{name}@latest",
        "models:/{name}/1",
        "models:/{name}/latest",
        "runs:/{run_id}",
        "runs:/{run_id}/model.keras",
        "runs:/{run_id}/model",  # the pyfunc model: its artifacts/model.keras
        "{keras_file}",
        "{keras_dir}",
    ],
)
def test_model_option_forms(trained, keras_file, reviews, spec):
    spec = spec.format(
        name=DEFAULT_MODEL_NAME,
        run_id=trained.run_id,
        keras_file=keras_file,
        keras_dir=keras_file.parent,
    )
    result = run("predict", "--model", spec, "--format", "csv", str(reviews["pos"]))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[1].split(",")[1] == "positive"


def test_latest_resolves_to_the_highest_version(trained, model, store, tmp_path):
    """``@latest`` is reserved in MLflow, so it cannot be set, but it resolves to the newest."""
    client = MlflowClient()
    name = "latest-check"
    client.create_registered_model(name)
    client.create_model_version(name, f"runs:/{trained.run_id}/model", trained.run_id)
    # Version 2: a different (untrained) model, logged in a run of its own.
    other = tmp_path / "model.keras"
    _untrained("block", sequence_length=24).save(other)
    with mlflow.start_run(experiment_id=client.get_run(trained.run_id).info.experiment_id) as r:
        mlflow.log_artifact(str(other))
    client.create_model_version(name, f"runs:/{r.info.run_id}/model.keras", r.info.run_id)
    assert str(client.get_model_version_by_alias(name, "latest").version) == "2"  # MLflow itself
    with pytest.raises(mlflow.exceptions.MlflowException, match="reserved"):
        client.set_registered_model_alias(name, "latest", "1")

    review = tmp_path / "r.txt"
    review.write_text(POSITIVE)

    def probability(spec: str) -> float:
        out = run("predict", "--model", spec, "--format", "json", str(review))
        return json.loads(out.stdout)[0]["positive_probability"]

    first, second = probability(f"models:/{name}/1"), probability(f"models:/{name}/2")
    assert first != pytest.approx(second, abs=1e-4)
    assert probability(f"models:/{name}@latest") == pytest.approx(second, abs=1e-6)
    assert probability(f"models:/{name}/latest") == pytest.approx(second, abs=1e-6)


# --- bad models: one line, exit code 2 -------------------------------------------------------


def _one_error_line(result, *fragments: str) -> str:
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    (line,) = err_lines(result)
    assert line.startswith("classify: error: ")
    for fragment in fragments:
        assert fragment in line, line
    return line


def test_no_model_found_says_how_to_train_one(tmp_path, monkeypatch, reviews):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'empty.db'}")
    result = run("predict", str(reviews["pos"]))
    _one_error_line(result, "no model found", DEFAULT_MODEL_NAME, "classify train")
    explained = run("explain", str(reviews["pos"]))
    _one_error_line(explained, "no model found", "classify train")


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("models:/{name}@nosuchalias", "has no alias 'nosuchalias'"),
        ("models:/{name}/99", "has no version 99"),
        ("models:/no-such-model@latest", "no registered model 'no-such-model'"),
        ("runs:/0123456789abcdef0123456789abcdef", "cannot get it"),
        ("{tmp}/missing.keras", "no such file"),
    ],
)
def test_model_that_cannot_be_found(trained, reviews, tmp_path, spec, fragment):
    spec = spec.format(name=DEFAULT_MODEL_NAME, tmp=tmp_path)
    _one_error_line(run("predict", "--model", spec, str(reviews["pos"])), fragment)


def test_files_that_are_not_models(trained, reviews, tmp_path):
    text = tmp_path / "model.keras"
    text.write_text("not a model at all\n")
    _one_error_line(run("predict", "--model", str(text), str(reviews["pos"])), "not a loadable")
    h5 = tmp_path / "model.h5"
    h5.write_bytes(b"\x00" * 100)
    _one_error_line(run("predict", "--model", str(h5), str(reviews["pos"])), "not a loadable")
    empty = tmp_path / "folder"
    empty.mkdir()
    _one_error_line(run("predict", "--model", str(empty), str(reviews["pos"])), "without a .keras")


def test_unsafe_model_is_refused_by_safe_mode(tmp_path, reviews):
    inputs = keras.Input((3,))
    unsafe = keras.Model(inputs, keras.layers.Lambda(lambda x: x * 2)(inputs))
    path = tmp_path / "lambda.keras"
    unsafe.save(path)
    line = _one_error_line(run("predict", "--model", str(path), str(reviews["pos"])))
    assert "not a loadable Keras model" in line and "safe_mode" in line


def test_a_classifier_without_its_vectorizer_is_refused(tmp_path, reviews):
    path = tmp_path / "ids.keras"
    build_classifier(ModelConfig(), vocab_size=50, sequence_length=8).save(path)
    line = _one_error_line(run("predict", "--model", str(path), str(reviews["pos"])))
    assert "not an end-to-end review classifier" in line


# --- bad inputs: one line each, the others still classified ----------------------------------


def test_every_bad_input_at_once(trained, reviews, tmp_path, monkeypatch):
    folder = tmp_path / "folder"
    folder.mkdir()
    empty, blank = tmp_path / "empty.txt", tmp_path / "blank.txt"
    empty.write_bytes(b"")
    blank.write_text("  \n\t \n")
    locked = tmp_path / "locked.txt"
    locked.write_text(POSITIVE)
    _make_unreadable(locked, monkeypatch)
    missing = tmp_path / "missing.txt"
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("a great film, superb and moving. Caf\xe9!".encode("latin-1"))
    args = [missing, reviews["pos"], folder, locked, empty, blank, latin1, reviews["neg"]]
    result = run("predict", "--format", "csv", *map(str, args))
    assert result.exit_code == 1
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [(r["source"], r["label"]) for r in rows] == [
        (str(reviews["pos"]), "positive"),
        (str(latin1), "positive"),
        (str(reviews["neg"]), "negative"),
    ]
    assert err_lines(result) == [
        f"classify: {missing}: no such file",
        f"classify: {folder}: is a directory",
        f"classify: {locked}: permission denied",
        f"classify: {empty}: empty review (no text, or only whitespace)",
        f"classify: {blank}: empty review (no text, or only whitespace)",
        f"classify: {latin1}: warning: not valid UTF-8; undecodable bytes replaced with U+FFFD",
    ]


def _make_unreadable(path: Path, monkeypatch) -> None:
    path.chmod(0)
    if os.access(path, os.R_OK):  # root reads anything: fail the open as it would for others
        real = predict_module.open_binary

        def refuse(name):
            if Path(name) == path:
                raise PermissionError(13, "Permission denied", name)
            return real(name)

        monkeypatch.setattr(predict_module, "open_binary", refuse)


@pytest.mark.parametrize(
    ("make", "message", "code"),
    [
        (lambda p: None, "no such file", 1),
        (lambda p: p.mkdir(), "is a directory", 1),
        (lambda p: p.write_bytes(b""), "empty review", 1),
        (lambda p: p.write_text(" \n\n\t"), "empty review", 1),
        (lambda p: p.write_bytes(b"great \xff\xfe film"), "warning: not valid UTF-8", 0),
    ],
    ids=["missing", "directory", "empty", "whitespace", "not-utf8"],
)
def test_each_bad_input_alone(trained, tmp_path, make, message, code):
    path = tmp_path / "input"
    make(path)
    result = run("predict", str(path))
    assert result.exit_code == code
    assert err_lines(result) == [f"classify: {path}: {message}" + _rest(message)]
    assert (result.stdout != "") == (code == 0)


def _rest(message: str) -> str:
    return {
        "empty review": " (no text, or only whitespace)",
        "warning: not valid UTF-8": "; undecodable bytes replaced with U+FFFD",
    }.get(message, "")


def test_per_line_bad_input(trained, tmp_path):
    path = tmp_path / "lines.txt"
    path.write_bytes(POSITIVE.encode() + b"\n\xff\xfe awful\n" + b"dull \xff\n")
    blank = tmp_path / "blank.txt"
    blank.write_text("\n \n")
    result = run("predict", "--per-line", "--format", "csv", str(path), str(blank))
    assert result.exit_code == 1
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [r["source"] for r in rows] == [f"{path}:1", f"{path}:2", f"{path}:3"]
    assert err_lines(result) == [
        f"classify: {path}:2: warning: not valid UTF-8; undecodable bytes replaced with U+FFFD "
        "(warned once per file)",
        f"classify: {blank}: empty (no non-blank line to classify)",
    ]


def test_usage_errors_exit_2(trained, reviews):
    for args in (
        ["predict"],
        ["predict", "--format", "xml", str(reviews["pos"])],
        ["predict", "--threshold", "1.5", str(reviews["pos"])],
        ["predict", "--batch-size", "0", str(reviews["pos"])],
        ["explain"],
        ["explain", "--format", "svg", str(reviews["pos"])],
    ):
        result = run(*args)
        assert result.exit_code == 2, args
        assert result.stdout == ""


# --- big files: bounded memory, the model's end kept, a note ---------------------------------


@pytest.fixture(scope="module")
def big_file(tmp_path_factory) -> Path:
    """50 MB of negative words on one line, then a few positive ones at the very end."""
    path = tmp_path_factory.mktemp("big") / "big.txt"
    unit = b"awful boring dull " * 4096
    tail = b" great wonderful superb" * 20 + b"\n"
    whole, rest = divmod(BIG - len(tail), len(unit))
    with path.open("wb") as out:
        for _ in range(whole):
            out.write(unit)
        out.write(b" " * rest + tail)
    assert path.stat().st_size == BIG
    return path


@pytest.mark.parametrize("per_line", [False, True], ids=["file", "per-line"])
def test_a_50_mb_review_keeps_its_tail_with_a_note(trained, big_file, per_line):
    args = ["predict", "--format", "csv", *(["--per-line"] if per_line else []), str(big_file)]
    result = run(*args)
    assert result.exit_code == 0, result.output
    (row,) = list(csv.DictReader(io.StringIO(result.stdout)))
    assert row["label"] == "positive"  # the model keeps the tail (data.truncate: tail)
    (note,) = err_lines(result)
    source = f"{big_file}:1" if per_line else str(big_file)
    assert note.startswith(f"classify: {source}: note: ")
    assert "classified from its last 65,536 bytes" in note
    if not per_line:
        assert f"{BIG:,} bytes" in note


@pytest.mark.parametrize("per_line", [False, True], ids=["file", "per-line"])
@pytest.mark.parametrize("keep", ["head", "tail"])
def test_reading_a_50_mb_file_takes_bounded_memory(big_file, per_line, keep):
    lines: list[str] = []
    tracemalloc.start()
    try:
        (review,) = list(
            read_reviews(
                [str(big_file)],
                Reporter(lines.append),
                per_line=per_line,
                max_bytes=65536,
                keep=keep,
            )
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024 * 1024, peak
    assert len(review.text.encode()) <= 65536
    words = review.text.split()
    assert set(words) <= {"awful", "boring", "dull", "great", "wonderful", "superb"}  # none cut
    if keep == "tail":
        assert words[-1] == "superb"
        assert "classified from its last 65,536 bytes" in lines[0]
    else:
        assert words[0] == "awful" and "great" not in words
        assert "classified from its first 65,536 bytes" in lines[0]
    assert len(lines) == 1


def test_a_cut_inside_a_multibyte_character_is_not_a_decoding_warning(tmp_path):
    path = tmp_path / "accents.txt"
    path.write_text("é" * 100_000, encoding="utf-8")  # one long word, 2 bytes per character
    for keep in ("head", "tail"):
        lines: list[str] = []
        (review,) = read_reviews([str(path)], Reporter(lines.append), max_bytes=65535, keep=keep)
        assert set(review.text) == {"é"}
        assert [line for line in lines if "warning" in line] == []


def test_a_long_stdin_review_keeps_its_tail():
    stream = io.BytesIO(b"first " * 50_000 + b"last")
    lines: list[str] = []
    (review,) = read_reviews(["-"], Reporter(lines.append), max_bytes=65536, stdin=stream)
    assert review.source == "<stdin>" and review.text.split()[-1] == "last"
    assert "300,004 bytes; classified from its last 65,536 bytes" in lines[0]


# --- explain ---------------------------------------------------------------------------------


def test_explain_writes_a_png(trained, reviews, tmp_path):
    target = tmp_path / "figures" / "pos.png"
    result = run("explain", str(reviews["pos"]), "-o", str(target))
    assert result.exit_code == 0, result.output
    data = target.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 10_000
    assert result.stdout.startswith(f"{target}: positive (P(positive) 0.")
    assert "tokens, attention of encoder layer 1 of 1" in result.stdout


def test_explain_writes_self_contained_html(trained, reviews, tmp_path):
    target = tmp_path / "neg.html"
    result = run("explain", str(reviews["neg"]), "-o", str(target))
    assert result.exit_code == 0, result.output
    page = target.read_text()
    assert "Predicted: negative" in page and ">terrible</span>" in page
    for external in ("<script", "http://", "https://", "<link", "src="):
        assert external not in page


def test_explain_stdin_to_the_default_file(trained, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run("explain", "-", "--format", "html", stdin=POSITIVE.encode())
    assert result.exit_code == 0, result.output
    assert (tmp_path / "stdin.attention.html").is_file()
    result = run("explain", "-", stdin=NEGATIVE.encode())
    assert (tmp_path / "stdin.attention.png").read_bytes()[:8] == PNG_MAGIC


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        (b" \n", "empty review (no text, or only whitespace)"),
        (b"!!! ... ???", "no words left after standardization (nothing to explain)"),
    ],
    ids=["missing", "empty", "punctuation"],
)
def test_explain_bad_input(trained, tmp_path, content, message):
    path = tmp_path / "review.txt"
    if content is not None:
        path.write_bytes(content)
    result = run("explain", str(path), "-o", str(tmp_path / "out.png"))
    assert result.exit_code == 1
    assert err_lines(result) == [f"classify: {path}: {message}"]
    assert not (tmp_path / "out.png").exists()


def _untrained(variant: str, sequence_length: int = 12) -> keras.Model:
    words = ["great", "awful", "film", "the", "plot", "wonderful", "dull"]
    vectorizer = ReviewVectorizer(len(words) + 2, sequence_length, "tail", words)
    cfg = ModelConfig(variant=variant, embed_dim=8, num_heads=2, ff_dim=8, num_layers=2)
    return build_end_to_end(vectorizer, build_classifier(cfg, len(words) + 2, sequence_length))


@pytest.mark.parametrize("variant", ["encoder", "block", "block_pos", "mha", "attention"])
def test_attention_replay_matches_the_model(variant):
    model = _untrained(variant)
    words = "Great film, the plot was zyzzyva but dull and awful. Wonderful the film great!"
    explanation = explain_text(model, words, source="x")
    # The replayed stack gives the model's own output: the weights are the ones it used.
    assert explanation.replayed_probability == pytest.approx(explanation.probability, abs=1e-5)
    expected = "great film the plot was zyzzyva but dull and awful wonderful the film great"
    assert explanation.tokens == expected.split()[-12:]  # the tail, as the vectorizer keeps it
    assert explanation.dropped_words == 2
    assert explanation.in_vocabulary[explanation.tokens.index("zyzzyva")] is False
    assert explanation.attention.shape == (12,)
    assert explanation.attention.sum() == pytest.approx(1.0, abs=1e-5)
    assert (explanation.attention >= 0).all()
    assert explanation.heads == (1 if variant == "attention" else 2)
    short = explain_text(model, "great film")  # padded: padding gets no attention
    assert short.tokens == ["great", "film"] and short.attention.sum() == pytest.approx(1.0)


def test_attention_received_by_hand():
    weights = np.array(
        [
            [[0.5, 0.5, 0.0], [1.0, 0.0, 0.0], [0.3, 0.3, 0.4]],  # head 0; row 2 is padding
            [[0.0, 1.0, 0.0], [0.5, 0.5, 0.0], [0.3, 0.3, 0.4]],  # head 1
        ]
    )
    received = attention_received(weights, np.array([True, True, False]))
    # Mean over heads: [[.25, .75], [.75, .25]]; mean over the two real queries: [.5, .5].
    np.testing.assert_allclose(received, [0.5, 0.5, 0.0])


# --- serving through MLflow ------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_mlflow_models_serve_answers_invocations(trained, store, tmp_path):
    port = _free_port()
    env = dict(os.environ, MLFLOW_TRACKING_URI=store)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # uvicorn
    log = tmp_path / "serve.log"
    command = [sys.executable, "-m", "mlflow", "models", "serve"]
    command += ["-m", f"models:/{DEFAULT_MODEL_NAME}@newest", "--env-manager", "local"]
    command += ["-p", str(port), "--host", "127.0.0.1"]
    with log.open("wb") as output:
        server = subprocess.Popen(
            command, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert server.poll() is None, log.read_text()[-3000:]
            try:
                with urllib.request.urlopen(f"{base}/ping", timeout=2) as response:
                    if response.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            assert time.monotonic() < deadline, "no answer in 120 s:\n" + log.read_text()[-3000:]
            time.sleep(1)
        body = json.dumps({"inputs": [POSITIVE, NEGATIVE]}).encode()
        request = urllib.request.Request(
            f"{base}/invocations", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            answer = json.loads(response.read())
        predictions = answer["predictions"]
        assert [p["label"] for p in predictions] == ["positive", "negative"]
        assert predictions[0]["positive_probability"] > 0.5 > predictions[1]["positive_probability"]
    finally:
        _stop(server)


def _stop(server: subprocess.Popen) -> None:
    """Stop the server by its PID, with its process group (the uvicorn it started)."""
    with contextlib.suppress(ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=20)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(server.pid, signal.SIGKILL)  # whatever of the group is left
    server.wait(timeout=10)


def test_predict_texts_takes_a_plain_list(model):
    assert predict_texts(model, []) == []
    probabilities = predict_texts(model, [POSITIVE, NEGATIVE, POSITIVE], batch_size=2)
    assert probabilities[0] > 0.5 > probabilities[1]
    direct = model(tf.constant([POSITIVE]), training=False).numpy()[0, 1]
    assert probabilities[0] == pytest.approx(float(direct))


# --- fast prediction: batches of similar lengths, trimmed to their longest review ------------


def _texts_of_many_lengths(count: int, seed: int = 0) -> list[str]:
    """Reviews from no word at all to several times ``sequence_length`` words, shuffled."""
    rng = np.random.default_rng(seed)
    words = ["great", "awful", "film", "the", "plot", "wonderful", "dull", "zyzzyva"]
    texts = ["", "!!!", "great"]
    for _ in range(count - len(texts)):
        length = int(rng.choice([rng.integers(1, 6), rng.integers(6, 30), rng.integers(30, 80)]))
        texts.append(" ".join(rng.choice(words, size=length)))
    return [texts[i] for i in rng.permutation(len(texts))]


def _direct(model: keras.Model, texts: list[str]) -> np.ndarray:
    """P(positive) from the end-to-end model itself, every review padded to sequence_length."""
    return model(tf.constant(texts), training=False).numpy()[:, 1]


def _widths_seen(model: keras.Model, monkeypatch) -> list[tuple[int, int]]:
    """Record the (B, T) shape of every batch that the classifier step gets."""
    predictor = predict_module._predictor(model)
    shapes: list[tuple[int, int]] = []
    classify = predictor.classify

    def spy(token_ids):
        shapes.append(tuple(token_ids.shape))
        return classify(token_ids)

    monkeypatch.setattr(predictor, "classify", spy)
    return shapes


@pytest.mark.parametrize("variant", ["encoder", "block", "block_pos", "mha", "attention"])
def test_trimmed_batches_give_the_end_to_end_probabilities(variant, monkeypatch):
    model = _untrained(variant, sequence_length=24)
    texts = _texts_of_many_lengths(90)
    shapes = _widths_seen(model, monkeypatch)
    probabilities = predict_texts(model, texts, batch_size=8)
    np.testing.assert_allclose(probabilities, _direct(model, texts), rtol=0, atol=1e-5)
    assert [batch for batch, _ in shapes] == [8] * 11 + [2]
    widths = [width for _, width in shapes]
    assert widths == sorted(widths) and widths[0] < 6 and widths[-1] == 24  # cut, then full


def test_order_is_kept_across_very_different_lengths(model, monkeypatch):
    short, long = "great", " ".join([NEGATIVE] * 10)  # 1 word; far over sequence_length
    texts = [
        (f"{POSITIVE} {i}" if i % 3 else long) if i % 2 else (short if i % 5 else NEGATIVE)
        for i in range(300)
    ]
    shapes = _widths_seen(model, monkeypatch)
    probabilities = predict_texts(model, texts, batch_size=16)
    expected = _direct(model, texts)
    np.testing.assert_allclose(probabilities, expected, rtol=0, atol=1e-5)
    assert np.ptp(expected) > 0.1  # a review in the wrong place would show
    assert {width for _, width in shapes} > {1, 24}  # short batches were trimmed


def test_a_classifier_saved_with_a_fixed_length_is_trimmed_too(tmp_path, monkeypatch):
    """Models saved before the classifiers took any length: same layers, any-length input."""
    words = ["great", "awful", "film", "the", "plot", "wonderful", "dull"]
    vectorizer = ReviewVectorizer(len(words) + 2, 24, "tail", words)
    cfg = ModelConfig(variant="encoder", embed_dim=8, num_heads=2, ff_dim=8, num_layers=1)
    fixed = keras.models.clone_model(
        build_classifier(cfg, len(words) + 2, 24),
        input_tensors=keras.Input(shape=(24,), dtype="int64", name="token_ids"),
    )
    build_end_to_end(vectorizer, fixed).save(tmp_path / "fixed.keras")
    model = load_keras_model(tmp_path / "fixed.keras")
    assert tuple(model.layers[-1].inputs[0].shape) == (None, 24)
    texts = _texts_of_many_lengths(40, seed=1)
    shapes = _widths_seen(model, monkeypatch)
    probabilities = predict_texts(model, texts, batch_size=8)
    np.testing.assert_allclose(probabilities, _direct(model, texts), rtol=0, atol=1e-5)
    assert min(width for _, width in shapes) < 24


def test_another_end_to_end_model_runs_whole():
    """Anything but ``classifier(vectorizer(texts))`` is run as it is, texts in."""
    inner = _untrained("attention", sequence_length=24)
    texts = keras.Input(shape=(), dtype="string")
    sharper = keras.layers.Activation("softmax")(inner(texts) * 3.0)
    model = keras.Model(texts, sharper)
    assert isinstance(predict_module._predictor(model), predict_module._EndToEnd)
    reviews = _texts_of_many_lengths(20)
    probabilities = predict_texts(model, reviews, batch_size=6)
    np.testing.assert_allclose(probabilities, _direct(model, reviews), rtol=0, atol=1e-6)


def test_the_cache_does_not_keep_a_model_alive():
    model = _untrained("attention")
    predict_texts(model, ["great film", "dull"])
    alive = weakref.ref(model)
    del model
    gc.collect()
    assert alive() is None


def test_token_counts_and_length_sorted_batches():
    ids = np.array([[5, 3, 0, 0], [0, 0, 0, 0], [2, 2, 2, 2], [7, 0, 0, 0], [4, 1, 9, 0]])
    lengths = predict_module.token_counts(ids)
    assert lengths.tolist() == [2, 0, 4, 1, 3]
    batches = list(predict_module.length_sorted_batches(lengths, 2))
    assert [(rows.tolist(), width) for rows, width in batches] == [
        ([1, 3], 1),  # no token at all: one column of padding
        ([0, 4], 3),
        ([2], 4),
    ]


def test_results_start_after_the_first_chunk(model):
    """Reviews are read a chunk at a time: the first results come before the rest is read."""
    read: list[int] = []

    def reviews():
        for number in range(1, 1001):
            read.append(number)
            yield Review(f"r:{number}", POSITIVE if number % 2 else NEGATIVE)

    predictions = predict_module.classify(model, reviews(), batch_size=64)
    first = next(predictions)
    assert first.source == "r:1" and len(read) == predict_module.FIRST_CHUNK
    rest = list(predictions)
    assert [p.source for p in [first, *rest]] == [f"r:{n}" for n in range(1, 1001)]
    assert [p.label for p in rest[:2]] == ["negative", "positive"]

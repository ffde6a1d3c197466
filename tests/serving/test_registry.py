"""Finding and loading models (every ``--model`` form, bad models: one line, exit code 2) and
serving the registered pyfunc model with ``mlflow models serve``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import keras
import mlflow
import numpy as np
import pytest
from mlflow.tracking import MlflowClient

from classifier.config.schema import ModelConfig
from classifier.models.classifier import build_classifier
from classifier.serving.registry import DEFAULT_MODEL_NAME
from classifier.serving.reviews import review_byte_limit
from tests.model_helpers import (
    NEGATIVE,
    POSITIVE,
    answers_from_threads,
    mixed_length_texts,
    one_error_line,
    run,
    untrained,
)
from tests.servers import free_port, wait_until_answering

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
    untrained("block", sequence_length=24).save(other)
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


def test_no_model_found_says_how_to_train_one(tmp_path, monkeypatch, reviews):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'empty.db'}")
    result = run("predict", str(reviews["pos"]))
    one_error_line(result, "no model found", DEFAULT_MODEL_NAME, "classify train")
    explained = run("explain", str(reviews["pos"]))
    one_error_line(explained, "no model found", "classify train")


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
    one_error_line(run("predict", "--model", spec, str(reviews["pos"])), fragment)


def test_files_that_are_not_models(trained, reviews, tmp_path):
    text = tmp_path / "model.keras"
    text.write_text("not a model at all\n")
    one_error_line(run("predict", "--model", str(text), str(reviews["pos"])), "not a loadable")
    h5 = tmp_path / "model.h5"
    h5.write_bytes(b"\x00" * 100)
    one_error_line(run("predict", "--model", str(h5), str(reviews["pos"])), "not a loadable")
    empty = tmp_path / "folder"
    empty.mkdir()
    one_error_line(run("predict", "--model", str(empty), str(reviews["pos"])), "without a .keras")


def test_unsafe_model_is_refused_by_safe_mode(tmp_path, reviews):
    inputs = keras.Input((3,))
    unsafe = keras.Model(inputs, keras.layers.Lambda(lambda x: x * 2)(inputs))
    path = tmp_path / "lambda.keras"
    unsafe.save(path)
    line = one_error_line(run("predict", "--model", str(path), str(reviews["pos"])))
    assert "not a loadable Keras model" in line and "safe_mode" in line


def test_a_classifier_without_its_vectorizer_is_refused(tmp_path, reviews):
    path = tmp_path / "ids.keras"
    build_classifier(ModelConfig(), vocab_size=50, sequence_length=8).save(path)
    line = one_error_line(run("predict", "--model", str(path), str(reviews["pos"])))
    assert "not an end-to-end review classifier" in line


# --- serving through MLflow ------------------------------------------------------------------


@pytest.fixture(scope="module")
def served(trained, store, tmp_path_factory):
    """The registered model served by ``mlflow models serve`` (one worker) on a free port, as
    docs/serving.md starts it; its base URL."""
    port = free_port()
    env = dict(os.environ, MLFLOW_TRACKING_URI=store)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # uvicorn
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    command = [sys.executable, "-m", "mlflow", "models", "serve"]
    command += ["-m", f"models:/{DEFAULT_MODEL_NAME}@newest", "--env-manager", "local"]
    command += ["-p", str(port), "--host", "127.0.0.1"]
    with log.open("wb") as output:
        server = subprocess.Popen(
            command, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_answering(f"{base}/ping", server, log, timeout=120, interval=1)
        yield base
    finally:
        _stop(server)


def post(base: str, body: object) -> tuple[int, dict]:
    """POST ``body`` as JSON to ``/invocations``: the status and the decoded answer."""
    request = urllib.request.Request(
        f"{base}/invocations",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_mlflow_models_serve_answers_invocations(served):
    status, answer = post(served, {"inputs": [POSITIVE, NEGATIVE, " \n"]})
    assert status == 200
    predictions = answer["predictions"]
    assert [p["label"] for p in predictions] == ["positive", "negative", "unknown"]
    assert predictions[0]["positive_probability"] > 0.5 > predictions[1]["positive_probability"]


def test_concurrent_requests_get_the_answers_each_gets_alone(served):
    texts = mixed_length_texts(192, seed=3)
    bodies = [{"inputs": texts[i : i + 1 + i % 3]} for i in range(0, len(texts), 2)]
    alone = [post(served, body) for body in bodies]
    together = answers_from_threads(lambda body: post(served, body), bodies, clients=16)
    assert [status for status, _ in alone] == [status for status, _ in together] == [200] * 96
    # Requests that meet are predicted in one batch, padded to other widths: padding is masked,
    # so the numbers are the same but for float rounding.
    for (_, expected), (_, answer) in zip(alone, together, strict=True):
        assert [p["label"] for p in answer["predictions"]] == [
            p["label"] for p in expected["predictions"]
        ]
        for field in ("positive_probability", "known_share"):
            np.testing.assert_allclose(
                [p[field] for p in answer["predictions"]],
                [p[field] for p in expected["predictions"]],
                rtol=0,
                atol=1e-6,
            )


LIMIT = review_byte_limit(24)  # the fixture model reads 24 words (tests/conftest.py): 64 KiB


@pytest.mark.parametrize(
    ("body", "line"),
    [
        ({"inputs": [None]}, "row 1: null, not a text"),
        ({"inputs": [POSITIVE, 42]}, "row 2: a number (42), not a text"),
        ({"inputs": [POSITIVE, ["a", "b"]]}, "row 2: a list, not a text"),
        ({"inputs": [{"review": "a"}]}, "row 1: a list, not a text"),
        ({"inputs": [True, None, "ok"]}, "row 1: true, not a text (and 1 more bad row)"),
        (
            {"inputs": ["é" * (LIMIT // 2 + 1)]},
            f"row 1: {LIMIT + 2:,} bytes of UTF-8; a review may have at most {LIMIT:,}",
        ),
        (
            {"dataframe_split": {"columns": ["review"], "data": [["fine"], [None]]}},
            "row 2: null, not a text",
        ),
    ],
    ids=[
        "null",
        "number",
        "list",
        "object",
        "several",
        "too-long",
        "frame",
    ],
)
def test_bad_input_is_refused_in_one_line_naming_the_row(served, body, line):
    status, answer = post(served, body)
    assert status == 400
    assert answer == {
        "error_code": "INVALID_PARAMETER_VALUE",
        "message": line,
        "sqlstate": answer["sqlstate"],
        "error_class": "INVALID_PARAMETER_VALUE",
    }


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"inputs": []}, "missing inputs"),
        ({}, "must be a JSON dictionary with exactly one of the input fields"),
        ({"text": ["a"]}, "must be a JSON dictionary with exactly one of the input fields"),
    ],
    ids=["empty-list", "no-field", "other-field"],
)
def test_requests_mlflow_refuses_itself_get_a_400_without_a_stack_trace(served, body, fragment):
    status, answer = post(served, body)
    assert status == 400
    assert fragment in answer["message"] and "stack_trace" not in answer
    assert "predictions" not in answer


def _stop(server: subprocess.Popen) -> None:
    """Stop the server by its PID, with its process group (the uvicorn it started)."""
    with contextlib.suppress(ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=20)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(server.pid, signal.SIGKILL)  # whatever of the group is left
    server.wait(timeout=10)

"""The one URI parser (:mod:`classifier.config.uris`): what it takes and what it refuses."""

from __future__ import annotations

import pytest

from classifier.config.uris import ModelURI, check_init_from, check_store_uri, model_uri
from classifier.errors import ConfigError, ModelError, TrackingError


@pytest.mark.parametrize(
    "value, kind",
    [
        ("model.keras", "path"),
        ("runs/bundle/", "path"),
        ("my:model.keras", "path"),  # a colon without a slash after it is no scheme
        ("~/models/m.keras", "path"),
        ("models:/imdb-sentiment", "registered"),
        ("models:/imdb-sentiment@newest", "registered"),
        ("models:/imdb-sentiment/3", "registered"),
        ("models:/imdb-sentiment/latest", "registered"),
        ("runs:/" + "a" * 32, "run"),
        ("runs:/" + "a" * 32 + "/model", "run"),
    ],
)
def test_supported_model_values(value, kind):
    assert model_uri(value).kind == kind


def test_a_file_uri_is_its_local_path():
    assert model_uri("file:///tmp/m.keras") == ModelURI("path", "/tmp/m.keras")


@pytest.mark.parametrize(
    "value, reason",
    [
        ("http://host/model.keras", "unsupported scheme 'http:'"),
        ("HTTPS://host/m", "unsupported scheme 'https:'"),
        ("s3://bucket/m", "unsupported scheme 's3:'"),
        ("mlflow-artifacts:/x", "unsupported scheme 'mlflow-artifacts:'"),
        ("models:", "not a models:/ URI"),
        ("models:/", "not a models:/ URI"),
        ("models:/a/b/c", "not a models:/ URI"),
        ("models:/a/v1", "not a models:/ URI"),
        ("runs:/", "not a runs:/ URI"),
        ("runs:/XYZ", "not a runs:/ URI"),
    ],
)
def test_other_model_values_are_one_line_naming_the_supported_forms(value, reason):
    with pytest.raises(ModelError) as raised:
        model_uri(value)
    assert str(raised.value) == (
        f"--model {value!r}: {reason}; give a local path, models:/NAME@ALIAS, "
        "models:/NAME/VERSION or runs:/RUN_ID"
    )


@pytest.mark.parametrize(
    "uri, scheme",
    [
        ("sqlite:////abs/mlflow.db", "sqlite"),
        ("sqlite:///relative.db", "sqlite"),
        ("http://127.0.0.1:5000", "http"),
        ("https://mlflow.example.org", "https"),
        ("postgresql://mlflow@127.0.0.1:5432/mlflow", "postgresql"),
        ("postgresql+psycopg2://mlflow@db/mlflow", "postgresql"),
        ("postgresql:///mlflow", "postgresql"),  # a local socket
    ],
)
def test_supported_store_uris(uri, scheme):
    assert check_store_uri(uri) == scheme


@pytest.mark.parametrize(
    "uri, reason",
    [
        (
            "ftp://x",
            "unsupported URI 'ftp://x'; give sqlite:///PATH, http(s)://HOST:PORT or postgresql://USER@HOST/DATABASE",
        ),
        (
            "mlruns",
            "MLflow's filesystem tracking backend (a folder of runs) is not supported; give "
            "sqlite:///PATH, http(s)://HOST:PORT or postgresql://USER@HOST/DATABASE",
        ),
        (
            "file:///tmp/mlruns",
            "MLflow's filesystem tracking backend (a folder of runs) is not supported; give "
            "sqlite:///PATH, http(s)://HOST:PORT or postgresql://USER@HOST/DATABASE",
        ),
        ("sqlite://x.db", "a SQLite store is sqlite:///PATH (three slashes)"),
        (
            "http://",
            "no host; give sqlite:///PATH, http(s)://HOST:PORT or postgresql://USER@HOST/DATABASE",
        ),
        ("http://host:port/", "Port could not be cast to integer value as 'port'"),
        ("http://[::1", "Invalid IPv6 URL"),
        (
            " ",
            "not a URI; give sqlite:///PATH, http(s)://HOST:PORT or postgresql://USER@HOST/DATABASE",
        ),
    ],
)
def test_other_store_uris_are_one_line(uri, reason):
    with pytest.raises(TrackingError) as raised:
        check_store_uri(uri, " (MLFLOW_TRACKING_URI)")
    assert str(raised.value) == f"tracking store {uri} (MLFLOW_TRACKING_URI): {reason}"


def test_a_pretrained_encoder_uri_is_checked_with_the_config():
    with pytest.raises(ConfigError) as raised:
        check_init_from("s3://bucket/encoder", "encoder")
    assert str(raised.value).startswith(
        "model.init_from 's3://bucket/encoder': unsupported scheme 's3:'; give a local path"
    )
    check_init_from("models:/imdb-encoder@newest", "encoder")  # fine

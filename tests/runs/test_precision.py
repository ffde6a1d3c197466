"""``train.mixed_precision``: float16 compute while training, float32 in what is saved."""

from __future__ import annotations

import keras
import mlflow
import numpy as np
import pytest
from click.testing import CliRunner
from mlflow.tracking import MlflowClient

from classifier.cli.main import cli
from classifier.config import variants
from classifier.config.schema import ModelConfig, load_config
from classifier.models.classifier import build_classifier
from classifier.runs.precision import as_float32, is_float32, precision_policy
from classifier.training.train import train
from tests.pretraining.test_pretrain import overrides as pretrain_overrides
from tests.training.test_train import tiny_config

# Two reviews, one of them a single word, and a row of padding only.
TOKEN_IDS = np.array([[5, 7, 2, 9, 0, 0], [3, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0]])


def all_layers(model: keras.Model) -> list[keras.Layer]:
    """Every layer of ``model``, the layers of nested models included."""
    layers = []
    for layer in model.layers:
        layers.append(layer)
        if isinstance(layer, keras.Model):
            layers.extend(all_layers(layer))
    return layers


def not_float32(model: keras.Model) -> dict[str, str]:
    """The layers of ``model`` (nested ones included) that do not compute in float32."""
    return {
        layer.name: layer.dtype_policy.name
        for layer in all_layers(model)
        if layer.dtype_policy.name != "float32"
    }


def test_the_policy_is_set_inside_and_restored_after_an_error():
    assert keras.config.dtype_policy().name == "float32"
    with pytest.raises(RuntimeError), precision_policy(True):
        assert keras.config.dtype_policy().name == "mixed_float16"
        raise RuntimeError("stop")
    assert keras.config.dtype_policy().name == "float32"


@pytest.mark.parametrize("variant", variants.names())
def test_a_mixed_model_matches_its_float32_copy_and_stays_finite(variant):
    cfg = ModelConfig(variant=variant, embed_dim=16, num_heads=2, ff_dim=32, num_layers=2)
    keras.utils.set_random_seed(3)
    with precision_policy(True):
        mixed = build_classifier(cfg, vocab_size=100, sequence_length=8)
    assert not is_float32(mixed)
    copy = as_float32(mixed, lambda: build_classifier(cfg, vocab_size=100, sequence_length=8))
    assert is_float32(copy) and copy is not mixed
    for a, b in zip(mixed.get_weights(), copy.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    half = keras.ops.convert_to_numpy(mixed(TOKEN_IDS))
    full = keras.ops.convert_to_numpy(copy(TOKEN_IDS))
    assert half.dtype == np.float32  # the head computes in float32
    assert np.isfinite(half).all()  # the row of padding included (no -inf, no NaN)
    np.testing.assert_allclose(half, full, atol=2e-3)


def test_a_float32_model_is_not_rebuilt():
    model = build_classifier(ModelConfig(variant="encoder"), vocab_size=50, sequence_length=8)
    assert as_float32(model, lambda: pytest.fail("rebuilt")) is model


def test_the_config_hash_of_earlier_runs_is_unchanged():
    """Runs recorded before the key existed keep their hash, so sweeps still find them."""
    assert load_config("configs/default.yaml").config_hash() == "a78397739452"
    mixed = load_config("configs/default.yaml", ["train.mixed_precision=true"])
    assert mixed.config_hash() != "a78397739452"


def test_a_mixed_precision_run_learns_and_saves_a_float32_model(store, fixture_data_dir):
    cfg = tiny_config(
        fixture_data_dir,
        "train.registered_model=imdb-mixed-test",
        "train.mixed_precision=true",
        "experiment=mixed-precision",
    )
    lines: list[str] = []
    result = train(cfg, echo=lines.append)
    assert lines[0].endswith(", mixed precision")
    assert keras.config.dtype_policy().name == "float32"  # restored after the run
    assert result.test_metrics["test_accuracy"] >= 0.9
    run = MlflowClient().get_run(result.run_id)
    assert run.data.tags["device"] == "CPU"
    assert run.data.params["train.mixed_precision"] == "True"
    path = mlflow.artifacts.download_artifacts(f"runs:/{result.run_id}/model.keras")
    saved = keras.saving.load_model(path, safe_mode=True)
    assert not_float32(saved) == {}


def test_a_mixed_precision_pretraining_saves_a_float32_encoder(store, fixture_data_dir):
    settings = pretrain_overrides(
        fixture_data_dir,
        "pretrain.epochs=1",
        "pretrain.registered_model=imdb-encoder-mixed",
        "train.mixed_precision=true",
    )
    args = [arg for item in settings for arg in ("--set", item)]
    result = CliRunner().invoke(cli, ["pretrain", *args], prog_name="classify")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0].endswith(", mixed precision")
    run_id = result.output.split()[1].rstrip(":")
    mlflow.set_tracking_uri(store)
    path = mlflow.artifacts.download_artifacts(f"runs:/{run_id}/encoder/encoder.keras")
    encoder = keras.saving.load_model(path, safe_mode=True)
    assert not_float32(encoder) == {}
    hidden = keras.ops.convert_to_numpy(encoder(TOKEN_IDS))
    assert hidden.dtype == np.float32 and np.isfinite(hidden).all()

"""The five classifier variants: shapes, padding invariance, one training step, .keras round trip."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from classifier.config.schema import ModelConfig
from classifier.config.variants import names
from classifier.data.vectorizer import ReviewVectorizer
from classifier.models.classifier import build_classifier, build_end_to_end

pytestmark = pytest.mark.slow  # every variant built, fitted and saved: 28 s of CPU

VARIANTS = names()
VOCAB = 50


def token_ids(length: int, real: int, batch: int = 3, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    ids = np.zeros((batch, length), dtype="int64")
    ids[:, :real] = rng.integers(1, VOCAB, size=(batch, real))
    return ids


@pytest.mark.parametrize("variant", VARIANTS)
def test_outputs_are_class_probabilities(variant):
    model = build_classifier(ModelConfig(variant=variant, embed_dim=8), VOCAB, 12)
    probabilities = keras.ops.convert_to_numpy(model(token_ids(12, 7)))
    assert probabilities.shape == (3, 2)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-6)


@pytest.mark.parametrize("variant", VARIANTS)
def test_padding_does_not_change_the_prediction(variant):
    """The same review padded to 8 or to 12 tokens gets the same probabilities."""
    cfg = ModelConfig(variant=variant, embed_dim=8, position="learned")
    short, long = build_classifier(cfg, VOCAB, 8), build_classifier(cfg, VOCAB, 12)
    for target, source in zip(short.weights, long.weights, strict=True):
        value = keras.ops.convert_to_numpy(source)
        target.assign(value[: target.shape[0]] if target.shape != source.shape else value)
    ids = token_ids(8, 5)
    padded = np.concatenate([ids, np.zeros((3, 4), dtype="int64")], axis=1)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(short(ids)),
        keras.ops.convert_to_numpy(long(padded)),
        atol=1e-5,
    )
    # One model takes any length (length-bucketed batches): padding still changes nothing.
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(long(ids[:, :6])),
        keras.ops.convert_to_numpy(long(padded)),
        atol=1e-5,
    )


@pytest.mark.parametrize("variant", VARIANTS)
def test_one_training_step_and_keras_round_trip(variant, tmp_path):
    keras.utils.set_random_seed(0)
    model = build_classifier(ModelConfig(variant=variant, embed_dim=8), VOCAB, 12)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    history = model.fit(token_ids(12, 9, batch=8), np.arange(8) % 2, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    model.save(tmp_path / "model.keras")
    loaded = keras.models.load_model(tmp_path / "model.keras", safe_mode=True)
    ids = token_ids(12, 6, seed=1)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(model(ids)), keras.ops.convert_to_numpy(loaded(ids)), atol=1e-6
    )


def test_encoder_depth_and_position_come_from_the_config():
    def encoder(**kwargs):
        return build_classifier(ModelConfig(variant="encoder", **kwargs), 100, 16)

    one = encoder(num_layers=1, position="sinusoidal")
    three = encoder(num_layers=3, position="sinusoidal")
    learned = encoder(num_layers=1, position="learned")
    assert len(three.get_layer("encoder").encoder_layers) == 3
    assert three.count_params() > one.count_params()
    assert learned.count_params() - one.count_params() == 16 * 16  # a learned table (T, d)


def test_end_to_end_model_takes_raw_strings(tmp_path):
    vectorizer = ReviewVectorizer(VOCAB, 12, "tail", vocabulary=["good", "bad", "film"])
    model = build_end_to_end(vectorizer, build_classifier(ModelConfig(), VOCAB, 12))
    texts = tf.constant(["A good film.", "Bad<br />bad film!"])
    assert model(texts).shape == (2, 2)
    model.save(tmp_path / "e2e.keras")
    loaded = keras.models.load_model(tmp_path / "e2e.keras", safe_mode=True)
    np.testing.assert_allclose(model(texts).numpy(), loaded(texts).numpy(), atol=1e-6)

"""``FusedAdam``, the training runs' Adam, takes Keras' Adam's steps (TensorFlow's fused kernel
for dense gradients, Keras' own update for sparse ones) and is saved with a checkpoint."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from classifier.config.schema import TrainConfig
from classifier.models.optimizers import FusedAdam
from classifier.training.build import optimizer


@pytest.mark.parametrize("clipnorm", [None, 0.5])
def test_the_same_steps_as_keras_adam_dense_and_sparse(clipnorm):
    rng = np.random.default_rng(0)
    start = rng.normal(size=(50, 3)).astype("float32")
    weights = {cls: keras.Variable(start) for cls in (keras.optimizers.Adam, FusedAdam)}
    optimizers = {cls: cls(0.05, clipnorm=clipnorm) for cls in weights}
    for step in range(6):
        dense = tf.constant(rng.normal(size=(50, 3)).astype("float32"))
        rows = tf.constant(rng.integers(0, 50, 8))
        values = tf.constant(rng.normal(size=(8, 3)).astype("float32"))
        sparse = tf.IndexedSlices(values, rows, dense_shape=tf.constant([50, 3], tf.int64))
        for cls, weight in weights.items():
            optimizers[cls].apply([sparse if step % 3 == 2 else dense], [weight])
    keras_adam, fused = (np.array(weight) for weight in weights.values())
    assert np.abs(keras_adam - start).max() > 0.1  # they moved
    np.testing.assert_allclose(fused, keras_adam, rtol=1e-5, atol=1e-6)
    for a, b in zip(*(o.variables for o in optimizers.values()), strict=True):
        np.testing.assert_allclose(np.array(b), np.array(a), rtol=1e-5, atol=1e-7)


def test_runs_train_with_it_and_a_checkpoint_restores_it(tmp_path):
    assert type(optimizer(TrainConfig())) is FusedAdam
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, activation="softmax")])
    model.compile(
        optimizer=optimizer(TrainConfig(learning_rate=0.01)), loss="sparse_categorical_crossentropy"
    )
    x, y = np.random.default_rng(1).normal(size=(16, 4)), np.arange(16) % 2
    model.fit(x, y, epochs=2, verbose=0)
    model.save(tmp_path / "last.keras")
    loaded = keras.models.load_model(tmp_path / "last.keras", safe_mode=True)
    assert type(loaded.optimizer) is FusedAdam
    assert float(loaded.optimizer.learning_rate) == pytest.approx(0.01)
    for a, b in zip(model.optimizer.variables, loaded.optimizer.variables, strict=True):
        np.testing.assert_array_equal(np.array(b), np.array(a))

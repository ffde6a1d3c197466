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
from tests.model_helpers import lazy_adam_reference


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


@pytest.mark.parametrize("compiled", [False, True])
def test_rows_alone_move_as_lazy_adam_moves_them(compiled):
    rng = np.random.default_rng(1)
    start = rng.normal(size=(30, 2)).astype("float32")
    table, bias = keras.Variable(start), keras.Variable(np.zeros(2, "float32"))
    adam = FusedAdam(0.05)
    adam.build([table, bias])

    def step_rows(ids, gradients):  # two slots of padding: row 20 (counted nowhere), row 3
        padded = tf.concat([ids, tf.constant([20, 3], tf.int32)], 0)
        padding = tf.constant([[5.0, -5.0], [5.0, 5.0]])
        adam.apply_to_rows(table, padded, tf.concat([gradients, padding], 0), 0.1, counted=12)

    step_rows = tf.function(step_rows, jit_compile=True) if compiled else step_rows
    expected = (start, np.zeros_like(start), np.zeros_like(start))
    for step in range(1, 6):
        ids = rng.integers(0, 10, 12).astype("int32")  # rows 10-29 never, repeats every step
        ids[0] = 3  # and row 3 every step, counted once besides its padding
        gradients = rng.normal(size=(12, 2)).astype("float32")
        step_rows(tf.constant(ids), tf.constant(gradients))
        adam.apply([tf.ones(2)], [bias])  # the step's other variables: counts the step
        expected = lazy_adam_reference(*expected, step, ids, gradients, 0.05, 0.1)
    moments = adam._momentums[0].numpy(), adam._velocities[0].numpy()
    for got, want in zip((table.numpy(), *moments), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(table.numpy()[10:], start[10:])  # untouched, bit for bit
    assert np.abs(table.numpy()[:10] - start[:10]).max() > 0.1

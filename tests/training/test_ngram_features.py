"""``bow``, ``nbow`` and ``nbow_attention`` train on their n-gram features computed once: the
view over them gives the classifier's probabilities, loss and gradients, training it trains the
classifier (whose checkpoint keeps the optimizer's state), and its batches hold every review once
an epoch (a reader's in the token-id pipeline's length buckets)."""

from __future__ import annotations

import dataclasses

import keras
import numpy as np
import pytest
import tensorflow as tf

from classifier.config.schema import DataConfig, ModelConfig
from classifier.data.batching import length_buckets
from classifier.models.classifier import build_classifier
from classifier.models.optimizers import FusedAdam
from classifier.training import ngram_features
from classifier.training.ngram_features import (
    NgramView,
    distinct_features,
    feature_batches,
    fit_inputs,
    padded_length,
)
from tests.model_helpers import lazy_adam_reference

pytestmark = pytest.mark.slow  # n-gram models built and fitted: 28 s of CPU

VOCAB, LENGTH, BUCKETS = 40, 16, 64


def classifier(variant: str, classes: int = 2, seed: int = 0) -> keras.Model:
    """A compiled ``variant`` with random (non-zero) scales and kernel, and an L2 penalty."""
    cfg = ModelConfig(variant=variant, ngram_buckets=BUCKETS, l2=0.01, embed_dim=8)
    model = build_classifier(cfg, VOCAB, LENGTH, classes)
    bag = model.get_layer("bag")
    rng = np.random.default_rng(seed)
    bag.scale.assign(rng.uniform(0.2, 2.0, bag.scale.shape).astype("float32"))
    bag.kernel.assign(rng.normal(0, 1, bag.kernel.shape).astype("float32"))
    model.compile(
        optimizer=keras.optimizers.Adam(0.05),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    return model


def token_ids(reviews: int, seed: int = 0) -> np.ndarray:
    """Reviews of 1 to LENGTH ids from a small vocabulary (repeats in every review), padded."""
    rng = np.random.default_rng(seed)
    ids = np.zeros((reviews, LENGTH), dtype="int64")
    for row in ids:
        length = rng.integers(1, LENGTH + 1)
        row[:length] = rng.integers(1, 8, length)
    return ids


def loss_and_gradients(model, inputs, labels, weights):
    """The model's probabilities, its compiled loss (L2 penalty included) and the loss's
    gradient with respect to each of ``weights``."""
    with tf.GradientTape() as tape:
        probabilities = model(inputs)
        loss = model.compute_loss(y=labels, y_pred=probabilities)
    gradients = [tf.convert_to_tensor(g) for g in tape.gradient(loss, weights)]
    return probabilities, loss, *gradients


@pytest.mark.parametrize(
    ("variant", "classes"), [("bow", 2), ("nbow", 2), ("nbow", 3), ("nbow_attention", 3)]
)
def test_the_view_gives_the_classifiers_probabilities_loss_and_gradient(variant, classes):
    model = classifier(variant, classes)
    ids = token_ids(6)
    labels = np.arange(6) % classes
    read = 5 if variant == "nbow_attention" else 0  # the reader's first 5 ids, for the test
    if read:
        ids[:, read:] = 0  # reviews the reader reads whole, as the classifier reads them
    reviews = distinct_features([(ids, labels)], model.get_layer("bag"), read)
    assert reviews.labels.numpy().tolist() == labels.tolist()
    assert reviews.lengths.numpy().tolist() == np.count_nonzero(ids, axis=1).tolist()
    for row, review in zip(reviews.features.to_list(), ids, strict=True):  # n-grams once, sorted
        assert row == sorted(set(row)) and 0 not in row and len(row) < 3 * np.count_nonzero(review)
    view = NgramView(model)
    assert (view.reader is None) == (variant != "nbow_attention")
    view.compile(loss=model.loss)
    weights = model.trainable_weights
    assert len(weights) == (2 if variant != "nbow_attention" else 5)  # 3: embedding, dense
    expected = loss_and_gradients(model, ids, labels, weights)
    inputs = (reviews.features.row_lengths(), reviews.features.flat_values)
    inputs = (*inputs, reviews.values.flat_values)
    if read:
        inputs = (*inputs, reviews.first_ids.to_tensor())
        assert inputs[-1].shape == (6, read)
    actual = loss_and_gradients(view, inputs, labels, weights)
    assert float(np.std(expected[2])) > 1e-3  # a kernel gradient worth comparing
    for want, got in zip(expected, actual, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    cross_entropy = keras.losses.sparse_categorical_crossentropy(labels, actual[0])
    assert float(actual[1]) > float(np.mean(cross_entropy)) + 1e-3  # the L2 penalty is in it


def id_batches(ids: np.ndarray, labels: np.ndarray, batch_size: int = 8) -> tf.data.Dataset:
    return tf.data.Dataset.from_tensor_slices((ids, labels)).batch(batch_size)


@pytest.mark.parametrize("variant", ["nbow", "nbow_attention"])
def test_training_the_view_trains_the_classifier_and_its_checkpoint_keeps_the_moments(
    variant, tmp_path
):
    model = classifier(variant)
    ids, labels = token_ids(40), np.arange(40) % 2
    kernel = np.array(model.get_layer("bag").kernel)
    data = DataConfig(batch_size=8, sequence_length=LENGTH)
    view, train, validation = fit_inputs(
        model, id_batches(ids, labels), id_batches(ids, labels), data, 1
    )
    assert isinstance(view, NgramView) and view.optimizer is model.optimizer
    history = view.fit(
        train, validation_data=validation, epochs=2, shuffle=False, verbose=0
    ).history
    assert set(history) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert int(model.optimizer.iterations) == 2 * train.cardinality()
    assert not np.allclose(np.array(model.get_layer("bag").kernel), kernel)
    # The classifier's own evaluation agrees with the view's last validation pass.
    assert model.evaluate(id_batches(ids, labels), verbose=0, return_dict=True)[
        "loss"
    ] == pytest.approx(history["val_loss"][-1], rel=1e-5)
    model.save(tmp_path / "last.keras")
    loaded = keras.models.load_model(tmp_path / "last.keras", safe_mode=True)
    moments = [np.array(v) for v in model.optimizer.variables]
    assert any(np.abs(m).sum() > 0 for m in moments[1:])
    for saved, restored in zip(moments, loaded.optimizer.variables, strict=True):
        np.testing.assert_array_equal(np.array(restored), saved)
    # A resumed run trains the loaded classifier through a view of its own, moments and all.
    resumed, train, _ = fit_inputs(loaded, id_batches(ids, labels), None, data, 2)
    resumed.fit(train, epochs=1, shuffle=False, verbose=0)
    assert int(loaded.optimizer.iterations) == 3 * train.cardinality()


def test_more_reviews_than_memory_holds_train_on_their_token_ids(monkeypatch):
    model = classifier("nbow")
    batches = id_batches(token_ids(40), np.arange(40) % 2)  # 5 batches of 8
    data = DataConfig(batch_size=8, sequence_length=LENGTH)
    monkeypatch.setattr(ngram_features, "MAX_REVIEWS_IN_MEMORY", 79)
    assert fit_inputs(model, batches, batches, data, 1) == (model, batches, batches)
    monkeypatch.setattr(ngram_features, "MAX_REVIEWS_IN_MEMORY", 80)
    assert isinstance(fit_inputs(model, batches, batches, data, 1)[0], NgramView)
    uncounted = batches.filter(lambda ids, labels: True)  # tf.data cannot tell how many
    assert fit_inputs(model, uncounted, None, data, 1) == (model, uncounted, None)


def encoder() -> keras.Model:
    model = build_classifier(
        ModelConfig(variant="encoder", embed_dim=8, num_heads=2, ff_dim=8, num_layers=1),
        VOCAB,
        LENGTH,
    )
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def test_other_variants_train_on_their_token_ids():
    model = encoder()
    batches = id_batches(token_ids(8), np.zeros(8, dtype="int64"))
    assert fit_inputs(model, batches, None, DataConfig(), 1) == (model, batches, None)


@pytest.mark.parametrize("variant", ["encoder", "nbow"])
def test_the_training_step_is_traced_once(variant):
    """The optimizer's and metrics' variables exist before ``fit``: created in the first
    step's trace, they would make TensorFlow trace the step again (about 1 s a run)."""
    model = encoder() if variant == "encoder" else classifier(variant)
    ids = token_ids(40, seed=1)
    trainer, batches, _ = fit_inputs(
        model, id_batches(ids, ids[:, 0] % 2), None, DataConfig(batch_size=16), 1
    )
    traced = []
    step = trainer.train_step
    trainer.train_step = lambda data: (traced.append(1), step(data))[1]  # runs when traced
    trainer.fit(batches, epochs=2, shuffle=False, verbose=0)
    assert len(traced) == 1


def test_every_review_once_an_epoch_reshuffled_and_a_review_without_features():
    model = classifier("nbow")
    ids = token_ids(50, seed=3)
    ids[-1] = 0  # the last review has no feature at all (nothing but padding)
    numbers = np.arange(50)  # the "labels" are the reviews' numbers
    bag = model.get_layer("bag")
    batches = feature_batches(id_batches(ids, numbers), bag, 8, shuffle_seed=7)
    features, values, *_ = distinct_features(id_batches(ids, numbers), bag)
    epochs = []
    for _ in range(2):
        seen = []
        for (row_lengths, flat, batch_values), labels in batches:
            assert flat.shape == batch_values.shape and int(np.sum(row_lengths)) == len(flat)
            chosen = labels.numpy().tolist()
            assert np.split(flat.numpy(), np.cumsum(row_lengths)[:-1])[0].tolist() == (
                features[chosen[0]].numpy().tolist()
            )
            seen.extend(chosen)
        assert sorted(seen) == list(range(50))
        epochs.append(seen)
    assert epochs[0] != epochs[1]
    # The review without features gets the bias alone, wherever it falls in its batch.
    view = NgramView(model)
    for order in ([49, 0], [0, 49]):
        chosen = tf.gather(features, order)
        inputs = (chosen.row_lengths(), chosen.flat_values, tf.gather(values, order).flat_values)
        np.testing.assert_allclose(
            view(inputs).numpy(), model(ids[order]).numpy(), rtol=1e-5, atol=1e-6
        )


def test_a_readers_batches_hold_each_review_once_in_the_buckets_of_its_length():
    model = classifier("nbow_attention")
    ids = token_ids(60, seed=4)
    numbers = np.arange(60)
    bag = model.get_layer("bag")
    data = DataConfig(batch_size=4, sequence_length=LENGTH)  # buckets [3, 5, ..., 15]: 8
    boundaries = [3, 5, 7, 9, 11, 13, 15]
    batches = feature_batches(id_batches(ids, numbers), bag, 4, 7, read=6, boundaries=boundaries)
    per_bucket = np.bincount(np.searchsorted(boundaries, np.count_nonzero(ids, axis=1), "right"))
    assert int(batches.cardinality()) == int(np.sum(-(-per_bucket // 4)))
    seen = []
    for (row_lengths, flat, _, first_ids), labels in batches:
        chosen = labels.numpy()
        lengths = np.count_nonzero(ids[chosen], axis=1)
        assert len(set(np.searchsorted(boundaries, lengths, "right"))) == 1  # one bucket
        assert first_ids.shape == (len(chosen), min(6, lengths.max()))
        np.testing.assert_array_equal(first_ids, ids[chosen, : first_ids.shape[1]])
        assert int(np.sum(row_lengths)) == len(flat)
        seen.extend(chosen.tolist())
    assert sorted(seen) == list(range(60))
    # classify train batches nbow_attention's reviews in vectorize's buckets (those above).
    assert length_buckets(LENGTH) == boundaries
    view, train, _ = fit_inputs(model, id_batches(ids, numbers), None, data, 1)
    assert view.reader is not None and int(train.cardinality()) == int(batches.cardinality())
    for (*_, first_ids), labels in train:
        lengths = np.count_nonzero(ids[labels.numpy()], axis=1)
        assert len(set(np.searchsorted(boundaries, lengths, "right"))) == 1
        assert first_ids.dtype == tf.int64 and first_ids.shape[1] == lengths.max()
    unbucketed = dataclasses.replace(data, bucket_by_length=False)
    _, train, _ = fit_inputs(model, id_batches(ids, numbers), None, unbucketed, 1)
    assert int(train.cardinality()) == 15  # any 4 reviews a batch


def lazy_classifier(seed: int = 0) -> keras.Model:
    """:func:`classifier` ``bow``, compiled with the runs' optimizer (lazy Adam is its method)."""
    model = classifier("bow", seed=seed)
    model.compile(optimizer=FusedAdam(0.05), loss=model.loss, metrics=["accuracy"])
    return model


def test_lazy_adam_moves_only_the_rows_of_the_batches_features_in_padded_batches():
    model = lazy_classifier()
    ids = token_ids(40, seed=5)
    ids[ids == 7] = 6  # id 7 in no review: its unigram row must stay as it was
    labels = ids[:, 0] % 2
    kernel = np.array(model.get_layer("bag").kernel)
    data = DataConfig(batch_size=8, sequence_length=LENGTH)
    view, train, validation = fit_inputs(
        model, id_batches(ids, labels), id_batches(ids, labels), data, 1, lazy=True
    )
    assert view.lazy
    kernel_now = model.get_layer("bag").kernel
    for (row_lengths, flat, values), _ in train:  # padded for XLA, with id 0 and value 0
        real = int(np.sum(row_lengths))
        assert len(flat) == int(padded_length(real)) == len(values) and len(flat) % 16 == 0
        assert not np.any(flat[real:]) and not np.any(values[real:])
        padded = view.from_rows(
            tf.gather(kernel_now, flat), (row_lengths, flat, values), padded=True
        )
        unpadded = view((row_lengths, flat[:real], values[:real]))
        np.testing.assert_allclose(padded, unpadded, rtol=1e-6, atol=1e-7)
    for (row_lengths, flat, _), _ in validation:  # validation as before
        assert int(np.sum(row_lengths)) == len(flat)
    history = view.fit(train, validation_data=validation, epochs=3, shuffle=False, verbose=0)
    assert int(model.optimizer.iterations) == 3 * train.cardinality()
    features, *_ = distinct_features(id_batches(ids, labels), model.get_layer("bag"))
    used = np.unique(features.flat_values.numpy())
    unused = np.setdiff1d(np.arange(len(kernel)), used)
    assert 7 in unused and 0 in unused
    now = np.array(model.get_layer("bag").kernel)
    np.testing.assert_array_equal(now[unused], kernel[unused])  # bit for bit
    assert np.abs(now[used] - kernel[used]).min() > 0  # every used row moved
    moments = model.optimizer._momentums[0].numpy(), model.optimizer._velocities[0].numpy()
    assert not np.any(moments[0][unused]) and not np.any(moments[1][unused])
    # The losses it reports are the cross-entropy, without the kernel's L2 penalty.
    cross_entropy = keras.losses.sparse_categorical_crossentropy(labels, model(ids))
    assert history.history["val_loss"][-1] == pytest.approx(float(np.mean(cross_entropy)), 1e-5)
    assert history.history["loss"][-1] < history.history["loss"][0]


def test_a_lazy_step_is_the_reference_lazy_adam_on_the_views_row_gradients():
    model = lazy_classifier()
    ids = token_ids(8, seed=6)
    labels = np.arange(8) % 2
    reviews = distinct_features([(ids, labels)], model.get_layer("bag"))
    inputs = (reviews.features.row_lengths(), reviews.features.flat_values)
    inputs = (*inputs, reviews.values.flat_values)
    view = NgramView(model, lazy=True)
    view.compile(optimizer=model.optimizer, loss=model.loss, metrics=["accuracy"])
    bag = model.get_layer("bag")
    kernel = np.array(bag.kernel)
    with tf.GradientTape() as tape:  # the cross-entropy's gradient with respect to each row
        rows = tf.gather(bag.kernel, inputs[1])
        loss = view.compute_loss(y=labels, y_pred=view.from_rows(rows, inputs))
    row_gradients = tape.gradient(loss, rows).numpy()
    model.optimizer.build(model.trainable_variables)
    view.train_step((inputs, tf.constant(labels)))
    zeros = np.zeros_like(kernel)
    want, *_ = lazy_adam_reference(
        kernel, zeros, zeros, 1, inputs[1].numpy(), row_gradients, 0.05, bag.l2
    )
    np.testing.assert_allclose(np.array(bag.kernel), want, rtol=1e-5, atol=1e-6)


def test_lazy_training_is_deterministic_and_leaves_a_reader_to_keras_adam():
    kernels = []
    for _ in range(2):
        keras.utils.set_random_seed(3)
        model = lazy_classifier()
        ids = token_ids(40, seed=5)
        view, train, _ = fit_inputs(
            model, id_batches(ids, ids[:, 0] % 2), None, DataConfig(batch_size=8), 1, lazy=True
        )
        view.fit(train, epochs=2, shuffle=False, verbose=0)
        kernels.append(np.array(model.get_layer("bag").kernel))
    np.testing.assert_array_equal(*kernels)
    fused = classifier("nbow_attention")
    fused.compile(optimizer=FusedAdam(0.05), loss=fused.loss)
    batches = id_batches(token_ids(16), np.arange(16) % 2)
    assert not fit_inputs(fused, batches, None, DataConfig(), 1, lazy=True)[0].lazy
    with pytest.raises(ValueError, match="lazy Adam needs FusedAdam, not Adam"):
        fit_inputs(classifier("bow"), batches, None, DataConfig(), 1, lazy=True)

"""``bow`` and ``nbow`` train on each review's n-gram features, computed once per split.

A bag-of-n-grams classifier (its ``bag`` layer, :class:`~classifier.layers.ngrams.BagOfNgrams`,
on the token ids, then the softmax ``head``) turns every review of every batch into hashed
n-gram features again at every step: the 1-to-3-grams of its padded ids, sorted, repeats
dropped, each scaled (idf or NB ratio) and the whole normalised. None of that changes while it
trains: the ids are the review's and the scales are set before training. :func:`fit_inputs`
computes each review's distinct features and their values once per split, and ``model.fit``
trains a :class:`NgramView` on them: the classifier's own ``bag`` and ``head`` layers (the same
kernel and bias variables, L2 penalty included) behind another input, compiled with the
classifier's own optimizer. What is checkpointed, saved, exported and evaluated is the classifier
on token ids, trained by it.

A batch holds its reviews' features end to end, without padding (the token-id batches are
padded to their longest review, and each review's 3T n-gram slots to those of the batch's
longest), so it needs no length buckets: ``data.batch_size`` reviews drawn at random, reshuffled
every epoch with the run's seed. Every other variant trains on the ids as before, and so does a
bag of n-grams on more than :data:`MAX_REVIEWS_IN_MEMORY` reviews (a labelled file of millions of
rows, whose token ids are cached on disk so that memory does not grow with the file).

Example (inside a run: ``model`` compiled, ``data`` its pipelines)::

    trainer, train, validation = fit_inputs(model, data.train, data.validation, cfg.data, seed)
    trainer.fit(train, validation_data=validation, epochs=3)  # trains ``model``
"""

from __future__ import annotations

import keras
import tensorflow as tf

from classifier.config.schema import DataConfig
from classifier.data.batching import as_written
from classifier.layers.ngrams import BagOfNgrams, first_occurrences, sorted_features
from classifier.runs.lifecycle import built_for_fit

#: The most reviews (training and validation together, counted as their batches times the batch
#: size) whose features a run holds in memory: about 0.6 GB at `nbow`'s 700 features a review.
MAX_REVIEWS_IN_MEMORY = 100_000


def ngram_bag(model: keras.Model) -> BagOfNgrams | None:
    """The ``bag`` of a classifier that is a bag of n-grams and its head alone (``bow``,
    ``nbow``), else None (``nbow_attention`` reads the ids elsewhere too)."""
    layers = {layer.name: layer for layer in model.layers}
    if not isinstance(layers.get("bag"), BagOfNgrams):
        return None
    others = {
        name for name, layer in layers.items() if not isinstance(layer, keras.layers.InputLayer)
    }
    return layers["bag"] if others == {"bag", "head"} else None


class NgramView(keras.Model):
    """A batch of reviews' distinct n-gram features, end to end, to the classifier's
    probabilities: ``(row_lengths (B,), features (N,), values (N,) or (N, K))``, review b's
    features being the next ``row_lengths[b]`` of them (first: Keras weighs a batch's loss by
    the length of its first input). It computes what the classifier's ``bag`` computes after
    :meth:`~classifier.layers.ngrams.BagOfNgrams.feature_values` (each review's values times
    their kernel rows, summed, plus the bias) without padding and with the same variables, then
    the classifier's ``head``: the very layer objects, not copies."""

    def __init__(self, classifier: keras.Model):
        super().__init__(name=f"{classifier.name}_on_ngram_features")
        self.bag, self.head = classifier.get_layer("bag"), classifier.get_layer("head")

    def call(self, inputs):
        row_lengths, features, values = inputs
        rows = rows_with_dense_gradient(self.bag.kernel, features)  # (N, outputs)
        if len(values.shape) == 1:
            values = values[:, None]
        reviews = tf.shape(row_lengths, out_type=tf.int64)[0]
        of_review = tf.repeat(tf.range(reviews), row_lengths)  # ascending
        summed = tf.math.segment_sum(rows * values, of_review)  # a row up to the last review
        summed = tf.pad(summed, [[0, reviews - tf.shape(summed, out_type=tf.int64)[0]], [0, 0]])
        return self.head(summed + self.bag.bias)  # trailing reviews without a feature: 0 + bias


def rows_with_dense_gradient(table, ids):
    """``tf.gather(table, ids)`` (rows of a 2-D ``table``) whose gradient is the dense table
    gradient, each column summed by id on its own. TensorFlow's default, a sparse gradient
    that Adam's dense update then sums by id over whole rows, takes twice as long on rows of
    2 floats (46 against 20 ms for a batch of 1,024 reviews on 2 cores)."""
    return _gathered_rows(tf.convert_to_tensor(table), ids)


@tf.custom_gradient
def _gathered_rows(table, ids):
    def gradient(upstream):  # (N, columns): one row per id
        rows = tf.shape(table, out_type=ids.dtype)[0]
        columns = [
            tf.math.unsorted_segment_sum(upstream[:, k], ids, rows) for k in range(table.shape[1])
        ]
        return tf.stack(columns, axis=1), None

    return tf.gather(table, ids), gradient


def fit_inputs(
    model: keras.Model,
    train: tf.data.Dataset,
    validation: tf.data.Dataset | None,
    data: DataConfig,
    seed: int,
) -> tuple[keras.Model, tf.data.Dataset, tf.data.Dataset | None]:
    """What ``model.fit`` takes for the compiled ``model``: for a bag of n-grams its
    :class:`NgramView` and the reviews of ``train`` (shuffled with ``seed``) and ``validation``
    (token-id batches) as feature batches; for any other model, or more than
    :data:`MAX_REVIEWS_IN_MEMORY` reviews or an unknown number of them, themselves."""
    bag = ngram_bag(model)
    counts = [int(split.cardinality()) for split in (train, validation) if split is not None]
    unknown = min(counts) < 0  # tf.data's UNKNOWN or INFINITE cardinality
    if bag is None or unknown or sum(counts) * data.batch_size > MAX_REVIEWS_IN_MEMORY:
        return built_for_fit(model, train), train, validation
    view = NgramView(model)
    view.compile(optimizer=model.optimizer, loss=model.loss, metrics=["accuracy"])

    def batches(split: tf.data.Dataset, shuffle_seed: int | None) -> tf.data.Dataset:
        return feature_batches(split, bag, data.batch_size, shuffle_seed)

    train = batches(train, seed)
    return (
        built_for_fit(view, train),
        train,
        None if validation is None else batches(validation, None),
    )


def feature_batches(
    id_batches: tf.data.Dataset, bag: BagOfNgrams, batch_size: int, shuffle_seed: int | None = None
) -> tf.data.Dataset:
    """``((row_lengths, features, values), labels)`` batches (:class:`NgramView`'s inputs) of
    the reviews in ``(ids, labels)`` batches: each review's distinct features computed once and
    held in memory; batches of ``batch_size`` reviews, with ``shuffle_seed`` reshuffled every
    epoch. No padding, so no length buckets either: a batch is any ``batch_size`` reviews."""
    features, values, labels = distinct_features(id_batches, bag)

    @as_written
    def batch(numbers):
        chosen = tf.gather(features, numbers)
        inputs = (chosen.row_lengths(), chosen.flat_values, tf.gather(values, numbers).flat_values)
        return inputs, tf.gather(labels, numbers)

    reviews = tf.data.Dataset.range(int(labels.shape[0]))
    if shuffle_seed is not None:
        reviews = reviews.shuffle(len(reviews), seed=shuffle_seed, reshuffle_each_iteration=True)
    return reviews.batch(batch_size).map(batch).prefetch(tf.data.AUTOTUNE)


def distinct_features(
    id_batches: tf.data.Dataset, bag: BagOfNgrams
) -> tuple[tf.RaggedTensor, tf.RaggedTensor, tf.Tensor]:
    """Every review's distinct features (int32, ascending) and their values, as
    :meth:`~classifier.layers.ngrams.BagOfNgrams.feature_values` gives them, one ragged row per
    review, and the labels, over ``(ids, labels)`` batches."""

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int64)], autograph=False)
    def of_batch(ids):
        features = sorted_features(ids, bag.vocab_size, bag.buckets, bag.order)
        present = first_occurrences(features)
        values = bag.values_of(features, present)
        keep = present > 0
        return (
            tf.ragged.boolean_mask(tf.cast(features, tf.int32), keep),
            tf.ragged.boolean_mask(values, keep),
        )

    parts = [(*of_batch(ids), tf.convert_to_tensor(labels)) for ids, labels in id_batches]
    features, values, labels = zip(*parts, strict=True)
    return tf.concat(features, axis=0), tf.concat(values, axis=0), tf.concat(labels, axis=0)

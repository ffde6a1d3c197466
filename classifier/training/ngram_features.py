"""``bow``, ``nbow`` and ``nbow_attention`` train on each review's n-gram features, computed
once per split.

A bag-of-n-grams classifier (its ``bag`` layer, :class:`~classifier.layers.ngrams.BagOfNgrams`,
on the token ids, then the softmax ``head``) turns every review of every batch into hashed
n-gram features again at every step: the 1-to-3-grams of its padded ids, sorted, repeats
dropped, each scaled (idf or NB ratio) and the whole normalised. None of that changes while it
trains: the ids are the review's and the scales are set before training. :func:`fit_inputs`
computes each review's distinct features and their values once per split, and ``model.fit``
trains a :class:`NgramView` on them: the classifier's own ``bag`` and ``head`` layers (the same
kernel and bias variables, L2 penalty included) behind another input, compiled with the
classifier's own optimizer. ``nbow_attention`` adds its attention reader: the view also takes
each review's first :data:`~classifier.models.classifier.READER_LENGTH` token ids and runs the
classifier's own reader layers on them, so only the n-gram branch changes how it computes.
What is checkpointed, saved, exported and evaluated is the classifier on token ids, trained by
it.

A batch holds its reviews' features end to end, without padding (the token-id batches are
padded to their longest review, and each review's 3T n-gram slots to those of the batch's
longest), so it needs no length buckets: ``data.batch_size`` reviews drawn at random, reshuffled
every epoch with the run's seed. A reader's ids are padded to the batch's longest review and
its attention costs the square of that, so its batches keep ``data.bucket_by_length``'s
buckets, as the token-id pipeline batches them (``data.batch_size`` reviews of one bucket).
Every other variant trains on the ids as before, and so does a bag of n-grams on more than
:data:`MAX_REVIEWS_IN_MEMORY` reviews (a labelled file of millions of rows, whose token ids are
cached on disk so that memory does not grow with the file).

Example (inside a run: ``model`` compiled, ``data`` its pipelines)::

    trainer, train, validation = fit_inputs(model, data.train, data.validation, cfg.data, seed)
    trainer.fit(train, validation_data=validation, epochs=3)  # trains ``model``
"""

from __future__ import annotations

from typing import NamedTuple

import keras
import tensorflow as tf

from classifier.config.schema import DataConfig
from classifier.data.batching import as_written, by_length, length_buckets
from classifier.layers.ngrams import BagOfNgrams, first_occurrences, sorted_features
from classifier.models.classifier import READER_LENGTH
from classifier.runs.lifecycle import built_for_fit

#: The most reviews (training and validation together, counted as their batches times the batch
#: size) whose features a run holds in memory: about 0.6 GB at `nbow`'s 700 features a review
#: (``nbow_attention``'s first 512 token ids add at most 0.4 GB).
MAX_REVIEWS_IN_MEMORY = 100_000


#: The layers of ``nbow_attention`` that end its attention reader and add its logits to the bag's.
READER_LAYERS = {"attention_logits", "fused_logits"}


def ngram_bag(model: keras.Model) -> BagOfNgrams | None:
    """The ``bag`` of a classifier that is a bag of n-grams and its head alone (``bow``,
    ``nbow``) or with an attention reader (``nbow_attention``), else None."""
    layers = {layer.name: layer for layer in model.layers}
    if not isinstance(layers.get("bag"), BagOfNgrams):
        return None
    others = {
        name for name, layer in layers.items() if not isinstance(layer, keras.layers.InputLayer)
    }
    return layers["bag"] if others == {"bag", "head"} or others >= READER_LAYERS else None


def reader(model: keras.Model) -> keras.Model | None:
    """``nbow_attention``'s attention branch as a model of its own: the classifier's layers
    from the token ids to the branch's logits (layer ``attention_logits``, which layer
    ``fused_logits`` adds to the bag's); None for a classifier without one."""
    if not {"bag", *READER_LAYERS} <= {layer.name for layer in model.layers}:
        return None
    return keras.Model(model.input, model.get_layer("attention_logits").output)


class NgramView(keras.Model):
    """A batch of reviews' distinct n-gram features, end to end, to the classifier's
    probabilities: ``(row_lengths (B,), features (N,), values (N,) or (N, K))``, review b's
    features being the next ``row_lengths[b]`` of them (first: Keras weighs a batch's loss by
    the length of its first input). It computes what the classifier's ``bag`` computes after
    :meth:`~classifier.layers.ngrams.BagOfNgrams.feature_values` (each review's values times
    their kernel rows, summed, plus the bias) without padding and with the same variables, then
    the classifier's ``head``: the very layer objects, not copies. A classifier with a
    :func:`reader` takes a fourth input, the reviews' first token ids (B, T <= READER_LENGTH),
    and adds the reader's logits to the bag's with its own ``fused_logits`` layer."""

    def __init__(self, classifier: keras.Model):
        super().__init__(name=f"{classifier.name}_on_ngram_features")
        self.bag, self.head = classifier.get_layer("bag"), classifier.get_layer("head")
        self.reader = reader(classifier)
        self.fuse = classifier.get_layer("fused_logits") if self.reader else None

    def call(self, inputs, training=None):
        row_lengths, features, values = inputs[:3]
        rows = rows_with_dense_gradient(self.bag.kernel, features)  # (N, outputs)
        if len(values.shape) == 1:
            values = values[:, None]
        reviews = tf.shape(row_lengths, out_type=tf.int64)[0]
        of_review = tf.repeat(tf.range(reviews), row_lengths)  # ascending
        summed = tf.math.segment_sum(rows * values, of_review)  # a row up to the last review
        summed = tf.pad(summed, [[0, reviews - tf.shape(summed, out_type=tf.int64)[0]], [0, 0]])
        logits = summed + self.bag.bias  # trailing reviews without a feature: 0 + bias
        if self.reader is not None:
            logits = self.fuse([logits, self.reader(inputs[3], training=training)])
        return self.head(logits)


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
    # The optimizer's moments in the classifier's order, not the view's: model.keras saves
    # them by position, and loading builds them from the classifier's variables.
    if not model.optimizer.built:
        model.optimizer.build(model.trainable_variables)
    view = NgramView(model)
    view.compile(optimizer=model.optimizer, loss=model.loss, metrics=["accuracy"])
    read = READER_LENGTH if view.reader else 0
    boundaries = length_buckets(data.sequence_length) if read and data.bucket_by_length else None

    def batches(split: tf.data.Dataset, shuffle_seed: int | None) -> tf.data.Dataset:
        return feature_batches(split, bag, data.batch_size, shuffle_seed, read, boundaries)

    train = batches(train, seed)
    return (
        built_for_fit(view, train),
        train,
        None if validation is None else batches(validation, None),
    )


def feature_batches(
    id_batches: tf.data.Dataset,
    bag: BagOfNgrams,
    batch_size: int,
    shuffle_seed: int | None = None,
    read: int = 0,
    boundaries: list[int] | None = None,
) -> tf.data.Dataset:
    """``((row_lengths, features, values), labels)`` batches (:class:`NgramView`'s inputs) of
    the reviews in ``(ids, labels)`` batches: each review's distinct features computed once and
    held in memory; batches of ``batch_size`` reviews, with ``shuffle_seed`` reshuffled every
    epoch. Without ``boundaries`` there is no padding and no length bucket: a batch is any
    ``batch_size`` reviews.

    With ``read`` > 0 the inputs also hold each review's first ``read`` token ids, padded to
    the batch's longest (``(row_lengths, features, values, ids)``); with ``boundaries`` a batch
    holds reviews whose length falls in one bucket, as
    :func:`~classifier.data.batching.vectorize` batches them."""
    features, values, labels, lengths, first_ids = distinct_features(id_batches, bag, read)

    @as_written
    def batch(numbers):
        chosen = tf.gather(features, numbers)
        inputs = (chosen.row_lengths(), chosen.flat_values, tf.gather(values, numbers).flat_values)
        if read:
            inputs = (*inputs, tf.gather(first_ids, numbers).to_tensor())
        return inputs, tf.gather(labels, numbers)

    numbers = tf.data.Dataset.range(int(labels.shape[0]))
    if shuffle_seed is not None:
        numbers = numbers.shuffle(len(numbers), seed=shuffle_seed, reshuffle_each_iteration=True)
    if boundaries is None:
        return numbers.batch(batch_size).map(batch).prefetch(tf.data.AUTOTUNE)
    buckets = by_length(
        numbers, lambda number: tf.gather(lengths, number), lengths.numpy(), boundaries, batch_size
    )
    return buckets.map(batch).prefetch(tf.data.AUTOTUNE)


class Reviews(NamedTuple):
    """:func:`distinct_features`' result: one row per review, in the order read."""

    features: tf.RaggedTensor  # its distinct feature ids (int32), ascending
    values: tf.RaggedTensor  # their values: (n,) or (n, K) a review
    labels: tf.Tensor
    lengths: tf.Tensor  # int32: its ids before the padding (at least 1), what vectorize buckets
    first_ids: tf.RaggedTensor | None  # its first ``read`` ids (int64), or None


def distinct_features(id_batches: tf.data.Dataset, bag: BagOfNgrams, read: int = 0) -> Reviews:
    """Every review's distinct features (int32, ascending) and their values, as
    :meth:`~classifier.layers.ngrams.BagOfNgrams.feature_values` gives them, its label and
    length, over ``(ids, labels)`` batches; with ``read`` > 0 also its first ``read`` ids (a
    review of nothing but padding reads one 0, as its token-id batch holds it)."""

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int64)], autograph=False)
    def of_batch(ids):
        features = sorted_features(ids, bag.vocab_size, bag.buckets, bag.order)
        present = first_occurrences(features)
        values = bag.values_of(features, present)
        keep = present > 0
        lengths = tf.maximum(tf.math.count_nonzero(ids, axis=1, dtype=tf.int32), 1)
        columns = (
            tf.ragged.boolean_mask(tf.cast(features, tf.int32), keep),
            tf.ragged.boolean_mask(values, keep),
            lengths,
        )
        if not read:
            return columns
        first_ids = tf.RaggedTensor.from_tensor(ids[:, :read], lengths=tf.minimum(lengths, read))
        return (*columns, first_ids)

    parts = [(tf.convert_to_tensor(labels), *of_batch(ids)) for ids, labels in id_batches]
    columns = [tf.concat(part, axis=0) for part in zip(*parts, strict=True)]
    labels, features, values, lengths = columns[:4]
    return Reviews(features, values, labels, lengths, columns[4] if read else None)

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

The bag of n-grams from config to served bundle, a module a line:

- :mod:`classifier.config.variants`: ``bow``, ``nbow`` (kind ``"bag"``), ``nbow_attention``
  (``"bag+reader"``), their builders and the ``prepare`` that sets the scales;
- :mod:`classifier.config.schema`, :mod:`~classifier.config.checks`: ``model.ngram_buckets``,
  ``model.ngram_order``, ``model.l2`` and ``train.lazy_adam`` (plain Adam on a bag's rows);
- :mod:`classifier.layers.ngrams`: the hashed n-gram numbering, and ``bow``'s TF-IDF bag;
- :mod:`classifier.layers.nb_ngrams`: ``nbow``'s bag, binary n-grams times NB log-count ratios,
  negated n-grams flipped (``model.negation``, scope from :mod:`classifier.layers.negation_scope`
  and the word ids of :mod:`classifier.config.negation`);
- :mod:`classifier.models.classifier`: the builders (layer ``bag``, then the softmax ``head``)
  and the idf or NB ratios counted on the training reviews;
- :mod:`classifier.models.optimizers`: :class:`FusedAdam`, whose lazy steps move a batch's rows;
- this module: the features once per split, and the :class:`NgramView` that trains on them;
- :mod:`classifier.training.transfer`: a trained ``bag`` copied into a new data set's classifier;
- :mod:`classifier.serving.bundle`: the bag's weights and head written to the bundle's
  ``ngrams.npz``;
- :mod:`classifier.serving.explain_parts`: their NumPy twin, read without TensorFlow;
- :mod:`classifier.explain.measures` (through ``keras_view`` or ``bundle_view``): each word's
  exact contribution, for ``classify explain``.

Example (inside a run: ``model`` compiled, ``data`` its pipelines)::

    trainer, train, validation = fit_inputs(model, data.train, data.validation, cfg.data, seed)
    trainer.fit(train, validation_data=validation, epochs=3)  # trains ``model``
"""

from __future__ import annotations

from typing import NamedTuple

import keras
import tensorflow as tf

from classifier.config.schema import DataConfig
from classifier.config.variants import variant_of_model
from classifier.data.batching import as_written, by_length, length_buckets
from classifier.layers.ngrams import BagOfNgrams
from classifier.models.classifier import READER_LENGTH
from classifier.models.optimizers import FusedAdam
from classifier.runs.lifecycle import built_for_fit

#: The most reviews (training and validation together, counted as their batches times the batch
#: size) whose features a run holds in memory: about 0.9 GB at `nbow`'s 700 features a review
#: (``nbow_attention``'s first 512 token ids add at most 0.6 GB); short texts hold far fewer
#: (a treebank phrase about 60, its letter n-grams included).
MAX_REVIEWS_IN_MEMORY = 150_000


#: Lazy steps that one call of Keras' training function runs: a lazy step of 64 IMDB reviews takes
#: about 1 ms, and a call of Keras' function about as long again (epochs of 0.34 s instead of
#: 0.64 s, ``benchmarks/train_throughput.py``). Progress lines then move 16 batches at a time.
LAZY_STEPS_PER_CALL = 16


def ngram_bag(model: keras.Model) -> BagOfNgrams | None:
    """The ``bag`` of a classifier whose variant has one (:attr:`Variant.kind
    <classifier.config.variants.Variant.kind>` ``"bag"`` or ``"bag+reader"``), known by the
    model's name (``imdb_<variant>``, saved with it); None for any other model."""
    variant = variant_of_model(model.name)
    return model.get_layer("bag") if variant is not None and variant.has_bag else None


def reader(model: keras.Model) -> keras.Model | None:
    """The attention branch of a classifier of kind ``"bag+reader"`` (``nbow_attention``) as a
    model of its own: the classifier's layers from the token ids to the branch's logits (layer
    ``attention_logits``, which layer ``fused_logits`` adds to the bag's); None for any other
    model."""
    variant = variant_of_model(model.name)
    if variant is None or variant.kind != "bag+reader":
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

    def __init__(self, classifier: keras.Model, lazy: bool = False):
        super().__init__(name=f"{classifier.name}_on_ngram_features")
        self.bag, self.head = classifier.get_layer("bag"), classifier.get_layer("head")
        self.reader = reader(classifier)
        self.fuse = classifier.get_layer("fused_logits") if self.reader else None
        self.lazy = lazy and self.reader is None  # a reader's view trains as without it

    @property
    def others(self) -> list:
        """The trainable variables but the bag's kernel, in ``trainable_weights``' order: what
        a lazy step leaves to the optimizer's ``apply_gradients``."""
        return [weight for weight in self.trainable_weights if weight is not self.bag.kernel]

    def call(self, inputs, training=None):
        rows = rows_with_dense_gradient(self.bag.kernel, inputs[1])  # (N, outputs)
        return self.from_rows(rows, inputs, training)

    def from_rows(self, rows, inputs, training=None, padded=False):
        """The probabilities from ``rows``, the kernel rows of the batch's features (N,
        outputs). ``padded``: features past the reviews' (:func:`feature_batches`' ``pad``)
        count for none, and the shapes are XLA's (slower without XLA: 15 against 5 ms for a
        batch of 1,024 ``nbow`` reviews)."""
        row_lengths, features, values = inputs[:3]
        if len(values.shape) == 1:
            values = values[:, None]
        reviews = tf.shape(row_lengths, out_type=tf.int64)[0]
        if padded:
            of_review = review_of_each(row_lengths, tf.shape(features, out_type=tf.int64)[0])
            summed = tf.math.unsorted_segment_sum(rows * values, of_review, reviews + 1)[:-1]
        else:
            of_review = tf.repeat(tf.range(reviews), row_lengths)  # ascending
            summed = tf.math.segment_sum(rows * values, of_review)  # a row up to the last review
            summed = tf.pad(summed, [[0, reviews - tf.shape(summed, out_type=tf.int64)[0]], [0, 0]])
        logits = summed + self.bag.bias  # a review without a feature: 0 + bias
        if self.reader is not None:
            logits = self.fuse([logits, self.reader(inputs[3], training=training)])
        return self.head(logits)

    def train_step(self, data):
        """Keras' step; with ``lazy`` (``train.lazy_adam``) one whose Adam moves the kernel
        rows of the batch's features alone, with the L2 penalty of those rows
        (:meth:`~classifier.models.optimizers.FusedAdam.apply_to_rows`), compiled by XLA
        (:meth:`rows_step`), then the bias and the head as Keras does. The pattern of Keras'
        guide "Customizing what happens in fit()"."""
        if not self.lazy:
            return super().train_step(data)
        inputs, labels = data
        loss, probabilities, gradients = self.rows_step(inputs, labels)
        self.optimizer.apply_gradients(zip(gradients, self.others, strict=True))  # counts the step
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss, sample_weight=tf.shape(labels)[0])  # as Keras
            else:
                metric.update_state(labels, probabilities)
        return {metric.name: metric.result() for metric in self.metrics}

    @tf.function(jit_compile=True, reduce_retracing=True, autograph=False)
    def rows_step(self, inputs, labels):
        """The lazy step's XLA part: the loss and probabilities of a batch, its kernel rows
        moved, and the gradients of :attr:`others`.
        XLA, not Keras' ``jit_compile``: Keras refuses XLA while op determinism is on (every
        run has it); on a CPU the step's scatters and segment sums run in order, so it is
        deterministic (tests/training/test_ngram_features.py). It compiles once per shape of
        the padded batches (:func:`padded_length`)."""
        kernel = self.bag.kernel
        with tf.GradientTape() as tape:
            rows = tf.gather(kernel, inputs[1])
            probabilities = self.from_rows(rows, inputs, training=True, padded=True)
            loss = self.compute_loss(y=labels, y_pred=probabilities)
        row_gradients, *gradients = tape.gradient(loss, [rows, *self.others])
        counted = tf.reduce_sum(tf.cast(inputs[0], tf.int64))  # the rest: padding
        self.optimizer.apply_to_rows(kernel, inputs[1], row_gradients, self.bag.l2, counted)
        return loss, probabilities, gradients

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """Keras' loss; with ``lazy``, the cross-entropy alone: the kernel's L2 penalty moves
        each batch's rows in the step instead, and a penalty over the whole kernel, whose
        value alone reads a million rows, is not reported (``loss``, ``val_loss``)."""
        if not self.lazy:
            return super().compute_loss(x, y, y_pred, sample_weight, training)
        return keras.ops.mean(keras.losses.sparse_categorical_crossentropy(y, y_pred))


def review_of_each(row_lengths, features):
    """The review (0 to B - 1) of each of ``features`` feature slots, the first
    ``row_lengths[0]`` of review 0 and so on; B for the slots past the last review's. Shapes
    known beforehand (``tf.repeat`` gives as many as the lengths sum to), so XLA compiles it.

    Example:
        >>> review_of_each(tf.constant([2, 0, 1], tf.int64), 5).numpy().tolist()
        [0, 0, 2, 3, 3]
    """
    ends = tf.cumsum(row_lengths)  # where each review's features end
    marks = tf.scatter_nd(ends[:, None], tf.ones_like(ends), [features + 1])
    return tf.cumsum(marks)[:features]


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
    lazy: bool = False,
) -> tuple[keras.Model, tf.data.Dataset, tf.data.Dataset | None]:
    """What ``model.fit`` takes for the compiled ``model``: for a bag of n-grams its
    :class:`NgramView` and the reviews of ``train`` (shuffled with ``seed``) and ``validation``
    (token-id batches) as feature batches; for any other model, or more than
    :data:`MAX_REVIEWS_IN_MEMORY` reviews or an unknown number of them, themselves.

    ``lazy`` (``train.lazy_adam``; ``bow`` and ``nbow``, ``nbow_attention`` trains as without
    it): the view's Adam moves each batch's kernel rows alone, in steps that XLA compiles
    (:meth:`NgramView.rows_step`), :data:`LAZY_STEPS_PER_CALL` to a call of Keras' training
    function, on training batches whose features are padded to one of a few lengths
    (:func:`padded_length`): XLA compiles a handful of shapes, not one a batch. The model's
    optimizer must be a :class:`~classifier.models.optimizers.FusedAdam`."""
    bag = ngram_bag(model)
    counts = [int(split.cardinality()) for split in (train, validation) if split is not None]
    unknown = min(counts) < 0  # tf.data's UNKNOWN or INFINITE cardinality
    if bag is None or unknown or sum(counts) * data.batch_size > MAX_REVIEWS_IN_MEMORY:
        return built_for_fit(model, train), train, validation
    # The optimizer's moments in the classifier's order, not the view's: model.keras saves
    # them by position, and loading builds them from the classifier's variables.
    if not model.optimizer.built:
        model.optimizer.build(model.trainable_variables)
    view = NgramView(model, lazy=lazy)
    lazy = view.lazy
    if lazy and not isinstance(model.optimizer, FusedAdam):
        raise ValueError(f"lazy Adam needs FusedAdam, not {type(model.optimizer).__name__}")
    view.compile(
        optimizer=model.optimizer,
        loss=model.loss,
        metrics=["accuracy"],
        steps_per_execution=LAZY_STEPS_PER_CALL if lazy else 1,
    )
    read = READER_LENGTH if view.reader else 0
    boundaries = length_buckets(data.sequence_length) if read and data.bucket_by_length else None

    def batches(split: tf.data.Dataset, shuffle_seed: int | None) -> tf.data.Dataset:
        pad = lazy and shuffle_seed is not None  # the training batches: XLA's
        return feature_batches(split, bag, data.batch_size, shuffle_seed, read, boundaries, pad)

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
    pad: bool = False,
) -> tf.data.Dataset:
    """``((row_lengths, features, values), labels)`` batches (:class:`NgramView`'s inputs) of
    the reviews in ``(ids, labels)`` batches: each review's distinct features computed once and
    held in memory; batches of ``batch_size`` reviews, with ``shuffle_seed`` reshuffled every
    epoch. Without ``boundaries`` there is no padding and no length bucket: a batch is any
    ``batch_size`` reviews.

    With ``read`` > 0 the inputs also hold each review's first ``read`` token ids, padded to
    the batch's longest (``(row_lengths, features, values, ids)``); with ``boundaries`` a batch
    holds reviews whose length falls in one bucket, as
    :func:`~classifier.data.batching.vectorize` batches them. With ``pad`` a batch's features
    and values are padded (id 0, value 0) to :func:`padded_length`, for XLA."""
    features, values, labels, lengths, first_ids = distinct_features(id_batches, bag, read)

    @as_written
    def batch(numbers):
        chosen = tf.gather(features, numbers)
        inputs = (chosen.row_lengths(), chosen.flat_values, tf.gather(values, numbers).flat_values)
        if pad:
            length = tf.shape(chosen.flat_values)[0]
            more = padded_length(length) - length
            inputs = (
                inputs[0],
                *(tf.pad(x, [[0, more]] + [[0, 0]] * (x.shape.rank - 1)) for x in inputs[1:]),
            )
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


def padded_length(n):
    """``n`` rounded up to a multiple of a quarter of the power of two at or below it, and of
    16: from 64 on, at most a quarter more and four lengths an octave. A bag of n-grams's
    batches of 64 IMDB reviews hold 16,000 to 30,000 features: five lengths.

    Example:
        >>> [int(padded_length(n)) for n in (1, 17, 100, 20_000)]
        [16, 32, 112, 20480]
    """
    n = tf.maximum(tf.cast(n, tf.int32), 1)
    octave = tf.bitwise.left_shift(
        1, tf.cast(tf.math.floor(tf.math.log(tf.cast(n, tf.float32)) / tf.math.log(2.0)), tf.int32)
    )
    step = tf.maximum(octave // 4, 16)
    return (n + step - 1) // step * step


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
        features, weights = bag.entries(ids)
        values = bag.values_of(features, weights)
        keep = weights != 0
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

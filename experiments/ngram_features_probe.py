"""Probe for issue #44, item 1: how fast could an `nbow` epoch be if each review's n-gram
features were computed once, and Adam updated only the rows a batch touches?

When it was written, `classify train` fed token ids to the model, which sorted them into
features at every step; since 2026-11-26 it trains on features computed once
(classifier/training/ngram_features.py), the design this probe led to. This probe trains `make train`'s `nbow` (configs/train.yaml, the first 15,000 training reviews, seed 1)
three ways, one after the other in one process, and prints each one's epoch times and its
validation accuracy after the same number of epochs:

- **ids**: the product as it was (the id pipeline, the `bag` layer; Adam is the runs' fused
  one now);
- **features, lazy Adam**: each review's distinct features and their NB-scaled, normalised
  values computed once by the `bag` layer's own `feature_values` and cached; batches bucketed
  by feature count; a model that multiplies them by the same kernel variable; an Adam that
  updates only the rows in the batch (moments included), L2 applied to those rows alone;
- **features, dense Adam**: the same features with the product's Adam and L2, to separate the
  two changes.

Usage:
    TFDS_DATA_DIR=../shared/tensorflow_datasets python experiments/ngram_features_probe.py --epochs 6
    ... --set data.batch_size=256 --set train.learning_rate=0.01   # the batches of before
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from classifier.cli.startup import import_tensorflow  # noqa: E402

import_tensorflow()

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402
from train_throughput import EpochTimer  # noqa: E402  (benchmarks/)

from classifier.config.schema import load_config  # noqa: E402
from classifier.data.pipeline import build_vectorizer, load_raw_splits, make_datasets  # noqa: E402
from classifier.training.build import new_model  # noqa: E402

SEED = 1
BOUNDARIES = [200, 400, 700, 1000, 1500, 2500, 4000]  # distinct features per review


class LazyAdam(keras.optimizers.Adam):
    """Adam that updates only the rows of a sparse gradient (and their moments), with an L2
    penalty ``l2`` on those rows (the probe's stand-in for the kernel's regularizer)."""

    def __init__(self, *args, l2: float = 0.0, **kwargs):
        super().__init__(*args, **kwargs)
        self.l2 = l2

    def update_step(self, gradient, variable, learning_rate):
        if not isinstance(gradient, tf.IndexedSlices):
            return super().update_step(gradient, variable, learning_rate)
        rows, position = tf.unique(gradient.indices)
        values = tf.math.unsorted_segment_sum(gradient.values, position, tf.shape(rows)[0])
        if self.l2:
            values += 2 * self.l2 * tf.gather(variable, rows)
        dtype = variable.dtype
        step = tf.cast(self.iterations + 1, dtype)
        beta_1, beta_2 = tf.cast(self.beta_1, dtype), tf.cast(self.beta_2, dtype)
        alpha = tf.cast(learning_rate, dtype) * tf.sqrt(1 - beta_2**step) / (1 - beta_1**step)
        m = self._momentums[self._get_variable_index(variable)]
        v = self._velocities[self._get_variable_index(variable)]
        m_rows = beta_1 * tf.gather(m, rows) + (1 - beta_1) * values
        v_rows = beta_2 * tf.gather(v, rows) + (1 - beta_2) * tf.square(values)
        self.assign(m, tf.IndexedSlices(m_rows, rows))
        self.assign(v, tf.IndexedSlices(v_rows, rows))
        update = alpha * m_rows / (tf.sqrt(v_rows) + self.epsilon)
        self.assign_sub(variable, tf.IndexedSlices(update, rows))


class FeatureBag(keras.Model):
    """Cached (features, values) to the `nbow` model's probabilities, with its `bag` kernel,
    bias and its head (an identity softmax for `nbow`)."""

    def __init__(self, classifier: keras.Model):
        super().__init__()
        self.bag, self.head = classifier.get_layer("bag"), classifier.get_layer("head")

    def call(self, inputs):
        features, values = inputs
        rows = tf.gather(self.bag.kernel, features)  # (B, F, outputs)
        return self.head(tf.reduce_sum(rows * values[..., None], axis=1) + self.bag.bias)


def featurized(batches: tf.data.Dataset, bag, batch_size: int, shuffle: bool) -> tf.data.Dataset:
    """Each review's distinct features and values, computed once, cached, then batched."""

    def distinct(token_ids, labels):
        features, values = bag.feature_values(token_ids)
        keep = values != 0
        return (
            tf.ragged.boolean_mask(features, keep),
            tf.ragged.boolean_mask(values, keep),
            labels,
        )

    reviews = batches.map(distinct).unbatch().cache()
    if shuffle:
        reviews = reviews.shuffle(25_000, seed=SEED, reshuffle_each_iteration=True)
    return (
        reviews.map(lambda f, v, y: ((f, v), y))
        .bucket_by_sequence_length(
            lambda x, y: tf.shape(x[0])[0],
            bucket_boundaries=BOUNDARIES,
            bucket_batch_sizes=[batch_size] * (len(BOUNDARIES) + 1),
        )
        .prefetch(tf.data.AUTOTUNE)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--set", action="append", default=[], help="a config override")
    args = parser.parse_args()
    cfg = load_config(ROOT / "configs" / "train.yaml", args.set)
    raw = load_raw_splits(cfg.data)
    vectorizer = build_vectorizer(cfg.data, raw.train)
    data = make_datasets(cfg.data, raw, vectorizer, seed=SEED)
    rows = []
    for way in ("ids", "features, lazy Adam", "features, dense Adam"):
        keras.utils.set_random_seed(SEED)
        model = new_model(cfg, data.train)  # the NB ratios from the training reviews
        timer = EpochTimer()
        if way == "ids":
            model.fit(data.train, epochs=args.epochs, callbacks=[timer], shuffle=False, verbose=0)
        else:
            bag = model.get_layer("bag")
            started = time.perf_counter()
            train = featurized(data.train, bag, cfg.data.batch_size, shuffle=True)
            for _ in train:  # computed once: the cache filled
                pass
            prepared = time.perf_counter() - started
            lazy = way.endswith("lazy Adam")
            if lazy:
                bag.kernel.regularizer = None  # applied to the touched rows by the optimizer
            trainer = FeatureBag(model)
            optimizer = (
                LazyAdam(cfg.train.learning_rate, l2=cfg.model.l2)
                if lazy
                else keras.optimizers.Adam(cfg.train.learning_rate)
            )
            trainer.compile(optimizer, "sparse_categorical_crossentropy", metrics=["accuracy"])
            trainer.fit(train, epochs=args.epochs, callbacks=[timer], verbose=0)
            way += f" (features computed once in {prepared:.1f} s)"
        accuracy = model.evaluate(data.validation, verbose=0, return_dict=True)["accuracy"]
        rows.append((way, timer.seconds, accuracy))
        print(way, [round(s, 2) for s in timer.seconds], round(accuracy, 4), flush=True)
    print(f"\n| way | epoch 1 (s) | epochs 2-{args.epochs}, median (s) | val acc |")
    print("|---|---:|---:|---:|")
    for way, seconds, accuracy in rows:
        later = sorted(seconds[1:])[len(seconds[1:]) // 2]
        print(f"| {way} | {seconds[0]:.2f} | {later:.2f} | {accuracy:.4f} |")


if __name__ == "__main__":
    main()

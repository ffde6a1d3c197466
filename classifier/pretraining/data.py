"""The pretraining text, its vocabulary and its tf.data pipelines (``classify pretrain``).

Pretraining reads the first ``pretrain.unlabelled_size`` reviews of the TFDS ``unsupervised``
split (all 50,000 by default) and the training portion of the ``train`` split
(``train[:data.train_size]``, labels dropped). The last ``pretrain.held_out`` of the unlabelled
reviews are held out: they only measure the masked-token loss and accuracy after each epoch.
Validation and test reviews are never read.

The vocabulary is adapted on the pretraining text (held-out reviews excluded) by the
classifier's own :class:`~classifier.data.vectorizer.ReviewVectorizer` (same standardization), with
``data.vocab_size`` minus the reserved tokens of
:func:`~classifier.config.pretrain.reserved_tokens`, which then end it: for ``mlm`` the last id
is ``[MASK]``. Fine-tuning with ``model.init_from`` uses this vocabulary as it is.

Example (with the data at hand)::

    cfg = load_config("configs/pretrain-smoke.yaml")
    texts = load_texts(cfg)
    vectorizer = pretrain_vectorizer(cfg, texts.train)
    data = make_pretrain_datasets(cfg, texts, vectorizer)
    (masked_ids, positions), labels, weights = next(iter(data.train))
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from classifier.config.pretrain import IMDB_UNLABELLED_REVIEWS, START_TOKEN, reserved_tokens
from classifier.config.schema import Config
from classifier.data.batching import vectorize
from classifier.data.imdb import check_sizes, resolve_data_dir, split_sizes, tfds_load
from classifier.data.pipeline import ReviewVectorizer, build_vectorizer, resumed_seed
from classifier.errors import ConfigError
from classifier.pretraining.masking import mlm_mask, span_batch


@dataclass(frozen=True)
class PretrainTexts:
    """Review texts (string scalars): what pretraining learns from, and the held-out ones."""

    train: tf.data.Dataset
    held_out: tf.data.Dataset
    sizes: dict[str, int]  # unlabelled, labelled (the training portion), held_out


@dataclass(frozen=True)
class PretrainDatasets:
    """Batches of ``(inputs, labels, weights)`` for ``model.fit``."""

    train: tf.data.Dataset
    held_out: tf.data.Dataset


def text_specs(cfg: Config, unlabelled_available: int = IMDB_UNLABELLED_REVIEWS) -> dict[str, str]:
    """TFDS split strings of the pretraining text.

    Example:
        >>> text_specs(Config())
        {'unlabelled': 'unsupervised[:49000]', 'held_out': 'unsupervised[49000:50000]',
         'labelled': 'train[:15000]'}
    """
    total = cfg.pretrain.unlabelled_size or unlabelled_available
    cut = total - cfg.pretrain.held_out
    return {
        "unlabelled": f"unsupervised[:{cut}]",
        "held_out": f"unsupervised[{cut}:{total}]",
        "labelled": f"train[:{cfg.data.train_size}]",
    }


def load_texts(cfg: Config) -> PretrainTexts:
    """The pretraining and held-out texts, after checking the sizes against the prepared copy.

    Raises:
        ConfigError: more unlabelled or held-out reviews than the copy holds.
    """
    sizes = split_sizes(cfg.data)
    check_sizes(cfg.data, sizes)
    available = sizes["unsupervised"]
    wanted = cfg.pretrain.unlabelled_size or available
    where = (
        f"the {available:,} reviews of the unsupervised split in {resolve_data_dir(cfg.data)[0]}"
    )
    if wanted > available:
        raise ConfigError(f"pretrain.unlabelled_size={wanted} exceeds {where}")
    if cfg.pretrain.held_out >= wanted:
        raise ConfigError(
            f"pretrain.held_out={cfg.pretrain.held_out} leaves no unlabelled review to "
            f"pretrain on, of {where}"
        )
    specs = text_specs(cfg, available)
    unlabelled, held_out, labelled = tfds_load(list(specs.values()), cfg.data, as_supervised=True)
    counts = {
        "unlabelled": wanted - cfg.pretrain.held_out,
        "labelled": cfg.data.train_size,
        "held_out": cfg.pretrain.held_out,
    }
    total = counts["unlabelled"] + counts["labelled"]
    # One fixed interleaving of the two sources, so that every stretch of an epoch mixes them.
    train = tf.data.Dataset.sample_from_datasets(
        [_texts(unlabelled), _texts(labelled)],
        weights=[counts["unlabelled"] / total, counts["labelled"] / total],
        seed=cfg.train.seed,
        rerandomize_each_iteration=False,
    )
    return PretrainTexts(train=train, held_out=_texts(held_out), sizes=counts)


def _texts(dataset: tf.data.Dataset) -> tf.data.Dataset:
    return dataset.map(lambda text, label: text)


def pretrain_vectorizer(
    cfg: Config, texts: tf.data.Dataset | None = None, vocabulary: list[str] | None = None
) -> ReviewVectorizer:
    """A vectorizer adapted on ``texts`` with the reserved tokens at the end of its vocabulary,
    or one with the given ``vocabulary`` (ids in order, ``''`` and ``'[UNK]'`` first)."""
    data = cfg.data
    if vocabulary is None:
        reserved = reserved_tokens(cfg.pretrain, data.sequence_length)
        smaller = dataclasses.replace(data, vocab_size=data.vocab_size - len(reserved))
        adapted = build_vectorizer(smaller, texts.map(lambda text: (text, 0)))
        vocabulary = adapted.get_vocabulary() + reserved
    return ReviewVectorizer.for_data(data, vocabulary[2:])


def make_pretrain_datasets(
    cfg: Config, texts: PretrainTexts, vectorizer: ReviewVectorizer, epochs_done: int = 0
) -> PretrainDatasets:
    """Corrupted batches for the objective: new masks every epoch for training (seeded; a run
    resumed after ``epochs_done`` epochs gets new ones too, :func:`resumed_seed`), the same
    masks every epoch for the held-out reviews, so that their figures compare."""
    seed = resumed_seed(cfg.train.seed, epochs_done)
    train = _token_batches(cfg, texts.train, vectorizer, shuffle_seed=seed)
    held_out = _token_batches(cfg, texts.held_out, vectorizer, shuffle_seed=None)
    corrupt = _corruption(cfg, vectorizer.get_vocabulary())
    return PretrainDatasets(
        train=_with_seeds(train, seed, True).map(corrupt),
        held_out=_with_seeds(held_out, cfg.train.seed + 1, False).map(corrupt),
    )


def _token_batches(cfg, texts, vectorizer, shuffle_seed):
    labelled = texts.map(lambda text: (text, tf.constant(0, tf.int64)))
    return vectorize(
        labelled,
        vectorizer,
        cfg.data.batch_size,
        shuffle_seed=shuffle_seed,
        bucket_by_length=cfg.data.bucket_by_length,
    )


def _with_seeds(batches: tf.data.Dataset, seed: int, fresh: bool) -> tf.data.Dataset:
    """Each batch with a random int64, the same sequence every epoch unless ``fresh``."""
    randoms = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=fresh)
    return tf.data.Dataset.zip(batches, randoms)


def _corruption(cfg: Config, vocabulary: list[str]):
    """``((token_ids, label), random) -> (inputs, labels, weights)`` for the objective."""
    p = cfg.pretrain
    if p.objective == "mlm":
        mask_id = len(vocabulary) - 1

        def masked(batch, random):
            ids, _ = batch
            seed = tf.stack([random, tf.constant(0, tf.int64)])
            corrupted, positions, labels, weights = mlm_mask(ids, seed, mask_id, p.mask_rate)
            return (corrupted, positions), labels, weights

        return masked

    start_id = vocabulary.index(START_TOKEN)
    sentinels = np.arange(start_id + 1, len(vocabulary), dtype=np.int64)

    def spans(ids, seed):
        return span_batch(ids, seed, start_id, sentinels, p.noise_density, p.mean_span_length)

    def corrupted(batch, random):
        ids, _ = batch
        source, decoder_in, labels, weights = tf.numpy_function(
            spans, [ids, random], [tf.int64, tf.int64, tf.int64, tf.float32], stateful=False
        )
        for tensor in (source, decoder_in, labels, weights):
            tensor.set_shape([None, None])
        return (source, decoder_in), labels, weights

    return corrupted

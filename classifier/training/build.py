"""A fresh compiled classifier for a config: the variant's model, its preparation on the training
reviews (``bow``'s idf), a pretrained encoder where ``model.init_from`` names one, and the optimizer.

Example (with the data at hand)::

    model = new_model(cfg, data.train)  # compiled, ready for model.fit
"""

from __future__ import annotations

from collections.abc import Sequence

import keras
import tensorflow as tf

from classifier.config import variants
from classifier.config.schema import Config, TrainConfig
from classifier.models.classifier import build_classifier
from classifier.models.optimizers import FusedAdam
from classifier.pretraining.encoder_artifact import PretrainedEncoder


def new_model(
    cfg: Config,
    train_batches: tf.data.Dataset,
    encoder: PretrainedEncoder | None = None,
    num_classes: int = 2,
    vocabulary: Sequence[str] = (),
) -> keras.Model:
    """A fresh compiled classifier of ``num_classes``; a variant that learns from the training
    reviews before training (``bow``: its idf weights) does so from ``train_batches`` (and the
    vectorizer's ``vocabulary``: ``nbow``'s letter n-grams). With
    ``encoder`` (``model.init_from``) its embedding and encoder start from the pretrained
    weights."""
    model = build_classifier(cfg.model, cfg.data.vocab_size, cfg.data.sequence_length, num_classes)
    if encoder is not None:
        encoder.copy_into(model)
    if prepare := variants.get(cfg.model.variant).prepare_function():
        prepare(model, train_batches, vocabulary)
    model.compile(
        optimizer=optimizer(cfg.train),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    return model


def optimizer(train: TrainConfig) -> keras.optimizers.Optimizer:
    """Adam at ``train.learning_rate`` (:class:`FusedAdam`); AdamW where
    ``train.weight_decay`` > 0; gradients clipped to ``train.clipnorm`` where set.

    Example:
        >>> type(optimizer(TrainConfig(weight_decay=0.01, clipnorm=1.0))).__name__
        'AdamW'
    """
    if train.weight_decay > 0:
        return keras.optimizers.AdamW(
            train.learning_rate, weight_decay=train.weight_decay, clipnorm=train.clipnorm
        )
    return FusedAdam(train.learning_rate, clipnorm=train.clipnorm)

"""Calibration of a trained classifier, folded into its head: a temperature and an offset.

The classifier's head is ``Dense(2, softmax)`` on the pooled features x: logits ``z = W x + b``,
log-odds of positive ``d = z1 - z0``. :func:`calibrate` fits, on the validation reviews (never
the test split), the temperature T and offset c with the lowest cross-entropy of
``sigmoid(d / T + c)`` (Platt scaling) and folds them into the head: its kernel and bias are
divided by T and c is added to the positive logit's bias, so the saved model, ``classify
predict`` and the pyfunc model report calibrated probabilities with no extra layer.

With more than two classes the head gives K logits and :func:`calibrate` fits the
temperature alone (temperature scaling, Guo et al. 2017): the softmax of ``z / T`` with the
lowest cross-entropy; there is no single threshold for an offset to move.

T > 1 softens an over-confident model; T < 1 (at least 0.1) sharpens an under-confident one;
dividing by T changes no label at threshold 0.5. The offset moves the threshold instead: a model
whose early-stopped weights say positive too often or too rarely (mean P(positive) off the
share of positive reviews) is shifted back, which does change labels, as a threshold chosen on
the validation reviews would. ``offset=False`` fits T alone. (A refit model, trained on the
validation reviews, is calibrated without them: :class:`classifier.training.refit.ChosenConfidence`.)

Example (a trained classifier and its validation pipeline)::

    calibration = calibrate(model, data.validation)  # e.g. T 1.36, offset +0.19
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import keras
import numpy as np
import tensorflow as tf

from classifier.evaluation.metrics import (
    fit_temperature,
    fit_temperature_and_offset,
    fit_temperature_multiclass,
)
from classifier.evaluation.traced import traced_once

HEAD = "head"  # the name build_classifier gives the Dense(2, softmax) head


@dataclass(frozen=True)
class Calibration:
    """The map from a head's log-odds d to calibrated ones: ``d / temperature + offset``.

    Example:
        >>> Calibration(temperature=2.0, offset=0.5).apply(np.array([2.0]))  # 2 / 2 + 0.5
        array([1.5])
        >>> Calibration(temperature=2.0, offset=0.5).undo(np.array([1.5]))  # (1.5 - 0.5) * 2
        array([2.])
    """

    temperature: float
    offset: float = 0.0

    def apply(self, log_odds: np.ndarray) -> np.ndarray:
        """The calibrated log-odds: what the head gives once this calibration is folded in."""
        return log_odds / self.temperature + self.offset

    def undo(self, calibrated: np.ndarray) -> np.ndarray:
        """The log-odds before calibration, from calibrated ones."""
        return (calibrated - self.offset) * self.temperature


def num_classes(classifier: keras.Model) -> int:
    """How many classes the classifier's head scores."""
    return int(classifier.get_layer(HEAD).units)


def head_logits(classifier: keras.Model, dataset: tf.data.Dataset) -> tuple[np.ndarray, ...]:
    """``(logits (N, K), labels (N,))`` over a dataset of ``(token_ids, label)`` batches, from
    the head's own inputs and weights in float64 (exact, where the log of the softmax would
    lose the tails to rounding)."""
    head = classifier.get_layer(HEAD)
    features = _head_inputs(classifier)
    kernel, bias = (keras.ops.convert_to_numpy(w).astype(np.float64) for w in head.weights)
    logits, labels = [], []
    for token_ids, batch_labels in dataset:
        x = features(tf.cast(token_ids, tf.int64)).numpy().astype(np.float64)
        logits.append(x @ kernel + bias)
        labels.append(batch_labels.numpy())
    return np.concatenate(logits), np.concatenate(labels)


#: Each classifier's traced :func:`_head_inputs` (weakly held: it does not keep it alive).
_HEAD_INPUTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _head_inputs(classifier: keras.Model) -> tf.types.experimental.GenericFunction:
    """Token ids (B, T) to the inputs of ``classifier``'s head, as one ``tf.function`` per
    classifier (calibration and the test evaluation share it). Run eagerly, every batch
    dispatched each of the classifier's ops from Python again."""
    if classifier not in _HEAD_INPUTS:
        features = keras.Model(classifier.inputs, classifier.get_layer(HEAD).input)
        _HEAD_INPUTS[classifier] = traced_once(
            lambda token_ids: features(token_ids, training=False), tf.int64, 2
        )
    return _HEAD_INPUTS[classifier]


def head_log_odds(classifier: keras.Model, dataset: tf.data.Dataset) -> tuple[np.ndarray, ...]:
    """``(z1 - z0, labels)`` of a two-class head (:func:`head_logits`)."""
    logits, labels = head_logits(classifier, dataset)
    return logits[:, 1] - logits[:, 0], labels


def fold_calibration(classifier: keras.Model, calibration: Calibration) -> None:
    """Divide the head's kernel and bias by the temperature and add the offset to the positive
    logit's bias: ``softmax`` then gives ``sigmoid(d / T + offset)`` (two classes), or the
    softmax of ``z / T`` (more; their calibration has no offset)."""
    head = classifier.get_layer(HEAD)
    kernel, bias = (keras.ops.convert_to_numpy(w) / calibration.temperature for w in head.weights)
    if calibration.offset:
        if len(bias) != 2:
            raise ValueError(f"an offset calibrates two classes, not {len(bias)}")
        bias[1] += calibration.offset
    head.set_weights([kernel, bias])


def calibrate(
    classifier: keras.Model, validation: tf.data.Dataset, offset: bool = True
) -> Calibration:
    """Fit the temperature (and, with ``offset`` and two classes, the offset) on
    ``validation``, fold them into the head and return them."""
    if num_classes(classifier) > 2:
        logits, labels = head_logits(classifier, validation)
        calibration = Calibration(fit_temperature_multiclass(logits, labels))
        fold_calibration(classifier, calibration)
        return calibration
    log_odds, labels = head_log_odds(classifier, validation)
    if offset:
        calibration = Calibration(*fit_temperature_and_offset(log_odds, labels))
    else:
        calibration = Calibration(fit_temperature(log_odds, labels))
    fold_calibration(classifier, calibration)
    return calibration

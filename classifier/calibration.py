"""Temperature scaling of a trained classifier, folded into its head.

The classifier's head is ``Dense(2, softmax)`` on the pooled features x: logits ``z = W x + b``.
:func:`calibrate` fits a temperature T on the validation reviews (never the test split) so that
``softmax(z / T)`` has the lowest cross-entropy, then divides the head's kernel and bias by T:
the saved model, ``classify predict`` and the pyfunc model then report calibrated probabilities
with no extra layer, and no label at threshold 0.5 changes (T > 0 keeps every log-odds' sign).
T > 1 softens an over-confident model; T < 1 (at least 0.1) sharpens an under-confident one.

Example (a trained classifier and its validation pipeline)::

    temperature = calibrate(model, data.validation)  # e.g. 1.8: it was over-confident
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from classifier.metrics import fit_temperature

HEAD = "head"  # the name build_classifier gives the Dense(2, softmax) head


def head_log_odds(classifier: keras.Model, dataset: tf.data.Dataset) -> tuple[np.ndarray, ...]:
    """``(z1 - z0, labels)`` over a dataset of ``(token_ids, label)`` batches, from the head's
    own inputs and weights (exact, where log(p1 / p0) would lose the tails to rounding)."""
    head = classifier.get_layer(HEAD)
    features = keras.Model(classifier.inputs, head.input)
    kernel, bias = (keras.ops.convert_to_numpy(w).astype(np.float64) for w in head.weights)
    log_odds, labels = [], []
    for token_ids, batch_labels in dataset:
        x = keras.ops.convert_to_numpy(features(token_ids, training=False)).astype(np.float64)
        z = x @ kernel + bias
        log_odds.append(z[:, 1] - z[:, 0])
        labels.append(batch_labels.numpy())
    return np.concatenate(log_odds), np.concatenate(labels)


def fold_temperature(classifier: keras.Model, temperature: float) -> None:
    """Divide the head's kernel and bias by ``temperature``: softmax(z / T) from then on."""
    head = classifier.get_layer(HEAD)
    head.set_weights([keras.ops.convert_to_numpy(w) / temperature for w in head.weights])


def calibrate(classifier: keras.Model, validation: tf.data.Dataset) -> float:
    """Fit the temperature on ``validation`` and fold it into the head; return it."""
    temperature = fit_temperature(*head_log_odds(classifier, validation))
    fold_temperature(classifier, temperature)
    return temperature

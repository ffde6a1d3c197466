"""The behaviour suite's ``dev`` part (:mod:`classifier.evaluation.behaviour`) scored at the end
of a two-class training run: accuracy per capability, ``behaviour_<capability>``, and their
mean, ``behaviour_overall``, logged beside the test metrics, and the run tagged with the part
and its digest (``behaviour_suite``: ``dev 1a2b3c4d5e6f``), which changes when its sentences do.

The sentences are vectorized by the run's vectorizer, cut to the longest one's ids (a tf.data
pipeline by length cost 0.5 s a run), and scored by the calibrated head, as the test split is
(:func:`classifier.evaluation.calibration.head_logits`); a sentence is positive where the
positive class's logit is at least the negative one's, as P(positive) >= 0.5 of the saved model.
A model whose classes are not ``negative``/``positive`` (or ``neg``/``pos``, in any case) is not
scored: no metrics, no message.

Example (at the end of ``finish_run``)::

    mlflow.log_metrics(behaviour_metrics_of(model, vectorizer, labels, cfg.data))
    # {'behaviour_vocabulary': 0.99, ..., 'behaviour_overall': 0.61}
"""

from __future__ import annotations

from collections.abc import Sequence

import keras
import numpy as np
import tensorflow as tf

from classifier.config.schema import DataConfig
from classifier.evaluation.behaviour import behaviour_metrics, suite, suite_classes, suite_digest
from classifier.evaluation.calibration import head_logits

#: The part every training run scores; ``test`` is kept for reporting.
SCORED_PART = "dev"
#: The run tag naming the part scored and its :func:`suite_digest`.
SUITE_TAG = "behaviour_suite"


def suite_tag() -> dict[str, str]:
    """The tag of a run scored on :data:`SCORED_PART` (``{"behaviour_suite": "dev ..."}``)."""
    return {SUITE_TAG: f"{SCORED_PART} {suite_digest(SCORED_PART)}"}


def behaviour_metrics_of(
    model: keras.Model, vectorizer, labels: Sequence[str], data: DataConfig
) -> dict[str, float]:
    """The suite's metrics of the classifier ``model`` (token ids in) with ``vectorizer``, of
    the classes ``labels``; empty where the classes are not the suite's."""
    predicted = suite_predictions(model, vectorizer, labels, data)
    return {} if predicted is None else behaviour_metrics(suite(SCORED_PART), predicted)


def suite_predictions(
    model: keras.Model, vectorizer, labels: Sequence[str], data: DataConfig
) -> list[str] | None:
    """The label (``negative``, ``positive``) the model gives each sentence of the scored part,
    in the suite's order; None where its classes are not the suite's."""
    classes = suite_classes(labels)
    if classes is None:
        return None
    ids = vectorizer(tf.constant([row.text for row in suite(SCORED_PART)]))
    # Padding is at the end: every sentence fits the width of the longest (a few dozen ids).
    ids = ids[:, : max(1, int(tf.reduce_max(tf.math.count_nonzero(ids, axis=1))))]
    batches = tf.data.Dataset.from_tensor_slices((ids, tf.zeros(len(ids), tf.int64)))
    logits, _ = head_logits(model, batches.batch(data.batch_size))
    positive = logits[:, classes["positive"]] >= logits[:, classes["negative"]]
    return np.where(positive, "positive", "negative").tolist()

"""What every run does before it starts (``classifier.runs.lifecycle``): library chatter kept
off the user's terminal."""

from __future__ import annotations

import logging

import tensorflow as tf

from classifier.runs.lifecycle import quiet_libraries
from tests.model_helpers import tensorflow_log


def traced_six_times(function) -> None:
    """Six ``tf.function``s of one Python function, each traced at its one call: what a sweep
    worker's points do with Keras' training step (one per model) on small data."""
    for _ in range(6):
        tf.function(function)(tf.constant(1.0))


def test_tensorflows_retracing_warning_is_kept_off_the_terminal(monkeypatch):
    logger = logging.getLogger("tensorflow")
    monkeypatch.setattr(logger, "filters", [])
    monkeypatch.delenv("CLASSIFY_VERBOSE", raising=False)
    with tensorflow_log() as said:
        traced_six_times(lambda x: x + 1)
    assert any("triggered tf.function retracing" in message for message in said), said

    quiet_libraries()
    quiet_libraries()  # a sweep calls it for every point: one filter
    assert len(logger.filters) == 1
    with tensorflow_log(filtered=True) as shown:
        traced_six_times(lambda x: x + 2)  # another function: TensorFlow counts each apart
        logger.warning("another warning")
    assert shown == ["another warning"]


def test_classify_verbose_keeps_it(monkeypatch):
    logger = logging.getLogger("tensorflow")
    monkeypatch.setattr(logger, "filters", [])
    monkeypatch.setenv("CLASSIFY_VERBOSE", "1")
    quiet_libraries()
    assert logger.filters == []

"""A model's function as a ``tf.function`` traced once, however many models a process runs.

Evaluation (:mod:`classifier.evaluation.calibration`) and prediction
(:mod:`classifier.serving.keras_engine`) trace one function per model. TensorFlow counts
tracings by the Python function's code, over every ``tf.function`` made from it, and prints
"5 out of the last 9 calls to <function ...> triggered tf.function retracing" once a few of
them trace within ten calls: in a process that trains and checks one model after another (a
sweep worker's points) it did, on the user's terminal, although each model's function traced
once. :func:`traced_once` wraps the function in a ``functools.partial``, which has no code of
its own, so each gets a count of its own.

Example::

    double = traced_once(lambda x: 2 * x, tf.float32, 1)
    double(tf.constant([1.0, 2.0]))  # [2.0, 4.0]; any length, one trace
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import tensorflow as tf


def traced_once(function: Callable, dtype: tf.DType, rank: int) -> Callable:
    """``function`` of one tensor of ``dtype`` and ``rank`` (any sizes) as a ``tf.function``,
    traced at its first call only, counted apart from every other (module docstring).

    Example:
        >>> square = traced_once(lambda x: x * x, tf.int64, 2)
        >>> square(tf.constant([[3]], tf.int64)).numpy().tolist()
        [[9]]
    """
    return tf.function(
        functools.partial(function),
        input_signature=[tf.TensorSpec([None] * rank, dtype)],
        autograph=False,  # nothing to convert: tracing is faster without
    )

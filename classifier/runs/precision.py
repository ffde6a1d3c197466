"""Mixed precision (``train.mixed_precision``) and the device that trains.

With mixed precision, the models built for training compute in float16 and keep their weights
in float32 (Keras' ``mixed_float16`` policy; ``compile`` then scales the loss so that small
float16 gradients do not round to zero). It pays on a GPU with tensor cores; on a CPU float16
is emulated and slower. What is saved and served is always float32: :func:`as_float32` rebuilds
the trained model under the float32 policy and copies its weights, which are float32 under
both policies, so the copy is exact.

TensorFlow places work on a GPU by itself when it sees one (which takes the GPU build:
``make install-gpu``); :func:`training_device` names what it sees, for the run's first line.

Example:
    >>> with precision_policy(True):
    ...     keras.config.dtype_policy().name
    'mixed_float16'
    >>> keras.config.dtype_policy().name
    'float32'
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import keras
import tensorflow as tf

MIXED = "mixed_float16"


@contextlib.contextmanager
def precision_policy(mixed: bool) -> Iterator[None]:
    """Build models in ``mixed_float16`` (``mixed``) or ``float32`` inside; restore after."""
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(MIXED if mixed else "float32")
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def is_float32(model: keras.Model) -> bool:
    """Whether every layer of ``model`` computes in float32 (a layer's sublayers share its
    policy: the global one when it was built)."""
    return all(layer.dtype_policy.name == "float32" for layer in model.layers)


def as_float32(model: keras.Model, rebuild: Callable[[], keras.Model]) -> keras.Model:
    """``model`` itself when it computes in float32, else ``rebuild()`` (the same architecture,
    built here under the float32 policy) with ``model``'s weights."""
    if is_float32(model):
        return model
    with precision_policy(False):
        fresh = rebuild()
    fresh.set_weights(model.get_weights())
    return fresh


def device_note(mixed_precision: bool) -> str:
    """What a run's first line adds about its device and precision: nothing for the usual
    case (a CPU, float32).

    Example:
        >>> device_note(False) if training_device() == "CPU" else ""
        ''
    """
    notes = [f"on {device}"] if (device := training_device()) != "CPU" else []
    if mixed_precision:
        notes.append("mixed precision")
    return "".join(f", {note}" for note in notes)


def training_device() -> str:
    """``"GPU"`` (with the count when there are several) if TensorFlow sees one, else ``"CPU"``.

    Example:
        >>> training_device() in {"CPU", "GPU"} or training_device().endswith(" GPUs")
        True
    """
    gpus = len(tf.config.list_physical_devices("GPU"))
    if not gpus:
        return "CPU"
    return "GPU" if gpus == 1 else f"{gpus} GPUs"

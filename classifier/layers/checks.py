"""Argument checks shared by the layers."""

from __future__ import annotations

from typing import Any

import keras

__all__ = ["check_width"]


def check_width(layer: keras.layers.Layer, shape: Any, d_model: int, what: str = "inputs") -> None:
    """Raise ``ValueError`` when the last axis of ``shape`` is known and is not ``d_model``.

    Args:
        layer: the layer being built (its name goes into the message).
        shape: the input shape, e.g. (B, T, d); an unknown last axis (``None``) passes.
        d_model: the width the layer expects.
        what: what the inputs are called in the message ("inputs", "decoder inputs").

    Example:
        >>> check_width(keras.layers.Identity(name="block"), (2, 10, 32), d_model=64)
        Traceback (most recent call last):
        ...
        ValueError: Layer 'block' expects inputs of width d_model=64, got shape (2, 10, 32).
    """
    if shape[-1] is not None and shape[-1] != d_model:
        raise ValueError(
            f"Layer '{layer.name}' expects {what} of width d_model={d_model}, got shape {shape}."
        )

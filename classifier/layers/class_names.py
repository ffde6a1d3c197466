"""The names of a classifier's classes, carried inside a saved model.

:class:`ClassNames` passes its input through unchanged; its config holds the class names, so a
``.keras`` file says what each output column means wherever it goes. An end-to-end model
without it is IMDB's: ``negative``, ``positive``.

Example:
    >>> layer = ClassNames(["very negative", "neutral", "very positive"])
    >>> tuple(layer(np.array([[0.2, 0.3, 0.5]])).shape), layer.labels
    ((1, 3), ('very negative', 'neutral', 'very positive'))
"""

from __future__ import annotations

from collections.abc import Sequence

import keras
import numpy as np  # noqa: F401 - used by the docstring example


@keras.saving.register_keras_serializable(package="classifier")
class ClassNames(keras.layers.Layer):
    """Identity on class probabilities (B, K) that names the K classes.

    Args:
        labels: the class names, in output order (at least two, all different).

    Call arguments:
        probabilities: (B, K).

    Returns:
        the same tensor.
    """

    def __init__(self, labels: Sequence[str], **kwargs):
        super().__init__(**{"dtype": "float32", **kwargs})
        labels = tuple(str(label) for label in labels)
        if len(labels) < 2 or len(set(labels)) != len(labels):
            raise ValueError(f"labels must be two or more different names, got {list(labels)}")
        self.labels = labels

    def call(self, probabilities):
        return probabilities

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self) -> dict:
        return {**super().get_config(), "labels": list(self.labels)}

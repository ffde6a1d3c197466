"""Load a trained end-to-end model and classify review texts.

Example:
    >>> model = load_keras_model("model.keras")
    >>> predict_texts(model, ["A wonderful film.", "Dull and far too long."])
    [0.93, 0.08]
"""

from __future__ import annotations

from pathlib import Path

import keras
import tensorflow as tf

import classifier.data  # noqa: F401 - registers ReviewVectorizer and standardize_review
import classifier.layers  # noqa: F401 - registers the custom layers


def load_keras_model(path: str | Path) -> keras.Model:
    """Load a ``.keras`` model with ``safe_mode`` on (no arbitrary code from the file)."""
    return keras.models.load_model(path, safe_mode=True)


def predict_texts(model: keras.Model, texts: list[str], batch_size: int = 512) -> list[float]:
    """Probability of ``positive`` for each text, predicted in batches."""
    probabilities: list[float] = []
    for start in range(0, len(texts), batch_size):
        batch = tf.constant(texts[start : start + batch_size], dtype=tf.string)
        probabilities.extend(model(batch, training=False).numpy()[:, 1].astype(float).tolist())
    return probabilities

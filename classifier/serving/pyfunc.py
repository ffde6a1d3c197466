"""The MLflow pyfunc model that training registers and ``mlflow models serve`` runs.

It imports no TensorFlow: a model with a LiteRT bundle is served without it (Keras is imported
only for a model logged before bundles).

Example (a registered model)::

    model = mlflow.pyfunc.load_model("models:/imdb-sentiment@newest")
    model.predict(["A wonderful film."])  # label, positive_probability
"""

from __future__ import annotations

from typing import Any

import mlflow
import numpy as np
import pandas as pd

from classifier.serving.litert_engine import load_bundle
from classifier.serving.predict import (
    label_of,
    labels_of,
    predict_probabilities,
    unknown_reviews,
)


class SentimentModel(mlflow.pyfunc.PythonModel):
    """MLflow pyfunc wrapper of a trained model (raw strings in).

    It runs the model's LiteRT bundle when it has one (no TensorFlow: ``mlflow models serve``
    starts faster), else the end-to-end ``.keras`` model. ``predict`` takes a list of review
    strings (or a one-column DataFrame) and returns a DataFrame with ``label``
    ("negative", "positive", or "unknown" when the model has nothing to go on,
    :mod:`classifier.serving.evidence`),
    ``positive_probability`` and ``known_share``. A model of more than two classes gives
    ``label`` (a class name or "unknown"), ``probability`` (of the most likely class),
    ``known_share`` and a ``P(name)`` column per class.
    """

    def load_context(self, context) -> None:
        if "bundle" in context.artifacts:
            self._model = load_bundle(context.artifacts["bundle"])
        else:  # a model logged before bundles
            from classifier.serving.keras_engine import load_keras_model

            self._model = load_keras_model(context.artifacts["keras_model"])

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_model", None)  # never pickle the model; it is loaded from the artefacts
        return state

    def predict(self, context, model_input: pd.DataFrame, params=None) -> pd.DataFrame:
        # The signature (one string column) makes MLflow hand over a DataFrame, also for a
        # plain list of strings; the type hint tells MLflow not to infer another signature.
        texts = model_input.iloc[:, 0].astype(str).tolist()
        probabilities = predict_probabilities(self._model, texts)
        unknown, known, words = unknown_reviews(self._model, texts, probabilities)
        known_share = (known / np.maximum(words, 1)).astype(float)
        labels = labels_of(self._model)
        answers = [
            label_of(row, labels, bool(u)) for row, u in zip(probabilities, unknown, strict=True)
        ]
        if len(labels) == 2:
            return pd.DataFrame(
                {
                    "label": answers,
                    "positive_probability": probabilities[:, -1].tolist(),
                    "known_share": known_share,
                }
            )
        return pd.DataFrame(
            {
                "label": answers,
                "probability": probabilities.max(axis=1).astype(float),
                "known_share": known_share,
                **{f"P({name})": probabilities[:, k] for k, name in enumerate(labels)},
            }
        )

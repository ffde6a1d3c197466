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
from mlflow.exceptions import MlflowException
from mlflow.protos.databricks_pb2 import INVALID_PARAMETER_VALUE

from classifier.errors import InputError
from classifier.serving.batching import Together
from classifier.serving.litert_engine import load_bundle
from classifier.serving.predict import (
    label_of,
    labels_of,
    max_review_bytes,
    predict_probabilities,
    unknown_reviews,
)
from classifier.serving.reviews import request_texts


class SentimentModel(mlflow.pyfunc.PythonModel):
    """MLflow pyfunc wrapper of a trained model (raw strings in).

    It runs the model's LiteRT bundle when it has one (no TensorFlow: ``mlflow models serve``
    starts faster), else the end-to-end ``.keras`` model. ``predict`` takes a list of review
    strings (or a one-column DataFrame) and returns a DataFrame with ``label``
    ("negative", "positive", or "unknown" when the model has nothing to go on,
    :mod:`classifier.serving.evidence`),
    ``positive_probability`` and ``known_share``. A model of more than two classes gives
    ``label`` (a class name or "unknown"), ``probability`` (of the most likely class),
    ``known_share`` and a ``P(name)`` column per class. A request with a row that is not a
    review (:func:`classifier.serving.reviews.request_texts`) is refused whole with a
    :class:`RefusedRequest` (over REST: a 400 with one line). Threads may predict at once.
    """

    def load_context(self, context) -> None:
        if "bundle" in context.artifacts:
            self._model = load_bundle(context.artifacts["bundle"])
        else:  # a model logged before bundles
            from classifier.serving.keras_engine import load_keras_model

            self._model = load_keras_model(context.artifacts["keras_model"])
        # Requests that arrive while the model works on others are predicted together after.
        self._together = Together(self._answers)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_model", None)  # never pickle the model; it is loaded from the artefacts
        state.pop("_together", None)
        return state

    def _answers(self, texts: list[str]) -> list[tuple[np.ndarray, bool, float]]:
        """Per text: its class probabilities, whether it is ``unknown``, its known share."""
        probabilities = predict_probabilities(self._model, texts)
        unknown, known, words = unknown_reviews(self._model, texts, probabilities)
        shares = (known / np.maximum(words, 1)).astype(float)
        return list(zip(probabilities, unknown.tolist(), shares.tolist(), strict=True))

    def predict(self, context, model_input: pd.DataFrame, params=None) -> pd.DataFrame:
        # The signature (one column of any JSON value) makes MLflow hand over a DataFrame, also
        # for a plain list of strings, with each row's value as the client sent it; the type
        # hint tells MLflow not to infer another signature.
        texts = _texts(model_input, max_review_bytes(self._model))
        labels = labels_of(self._model)
        answers = self._together(texts)
        probabilities = np.array([row for row, _, _ in answers], dtype=np.float64)
        probabilities = probabilities.reshape(len(texts), len(labels))
        known_share = [share for _, _, share in answers]
        verdicts = [
            label_of(row, labels, unknown)
            for row, (_, unknown, _) in zip(probabilities, answers, strict=True)
        ]
        if len(labels) == 2:
            return pd.DataFrame(
                {
                    "label": verdicts,
                    "positive_probability": probabilities[:, -1].tolist(),
                    "known_share": known_share,
                }
            )
        return pd.DataFrame(
            {
                "label": verdicts,
                "probability": probabilities.max(axis=1).astype(float),
                "known_share": known_share,
                **{f"P({name})": probabilities[:, k] for k, name in enumerate(labels)},
            }
        )


def _texts(model_input: pd.DataFrame, max_bytes: int) -> list[str]:
    """The review texts of a request, or :class:`RefusedRequest` naming the first bad row
    (:func:`classifier.serving.reviews.request_texts`)."""
    try:
        return request_texts(model_input.iloc[:, 0].tolist(), max_bytes)
    except InputError as error:
        raise RefusedRequest(str(error)) from None


class RefusedRequest(MlflowException):
    """A request that ``mlflow models serve`` answers with 400 and exactly this one line.

    MLflow's scoring server rewrites the message of a model's ``MlflowException`` to start
    with the whole request as a DataFrame ("Failed to predict data '...'"): several lines that
    echo the input back. This message keeps the line it was raised with.

    Example:
        >>> error = RefusedRequest("row 2: null, not a text")
        >>> error.message = "Failed to predict data ..."  # what MLflow's server does
        >>> error.message, error.get_http_status_code()
        ('row 2: null, not a text', 400)
    """

    def __init__(self, line: str):
        super().__init__(line, error_code=INVALID_PARAMETER_VALUE)

    @property
    def message(self) -> str:
        return self._line

    @message.setter
    def message(self, value: str) -> None:
        if not hasattr(self, "_line"):  # set once, by MlflowException.__init__
            self._line = value

"""A model trained and registered before the package had folders still loads and predicts the same.

``data/before_the_move/`` holds what commit b2bae7f (the last with 45 flat modules) wrote for a
tiny ``encoder`` run on the fixture reviews: its ``model.keras``, its LiteRT ``bundle/``, and the
``python_model.pkl`` of its registered pyfunc model, which pickles the wrapper class by its old
module path (``classifier.pyfunc.SentimentModel``). ``expected.json`` holds the probabilities
that code gave for five reviews through the Keras model and through the bundle.

Do not regenerate these files to make a test pass: they are the record of the old behaviour.
"""

from __future__ import annotations

import json
from pathlib import Path

import cloudpickle
import mlflow
import numpy as np

from classifier.serving.litert_engine import load_bundle
from classifier.serving.predict import predict_texts

DATA = Path(__file__).parent / "data" / "before_the_move"
EXPECTED = json.loads((DATA / "expected.json").read_text())


def test_the_keras_model_saved_before_the_move_predicts_the_same():
    from classifier.serving.keras_engine import load_keras_model

    model = load_keras_model(DATA / "model.keras")  # safe_mode: registered layers only
    probabilities = predict_texts(model, EXPECTED["texts"])
    np.testing.assert_allclose(probabilities, EXPECTED["keras"], rtol=0, atol=1e-5)


def test_the_bundle_written_before_the_move_predicts_the_same():
    probabilities = predict_texts(load_bundle(DATA / "bundle"), EXPECTED["texts"])
    np.testing.assert_allclose(probabilities, EXPECTED["bundle"], rtol=0, atol=1e-6)


def test_the_pyfunc_model_registered_before_the_move_unpickles_and_predicts():
    from classifier.serving.pyfunc import SentimentModel

    wrapper = cloudpickle.loads((DATA / "python_model.pkl").read_bytes())
    assert isinstance(wrapper, SentimentModel)
    context = mlflow.pyfunc.PythonModelContext(
        artifacts={"bundle": str(DATA / "bundle")}, model_config={}
    )
    wrapper.load_context(context)
    frame = wrapper.predict(context, _one_column(EXPECTED["texts"]))
    np.testing.assert_allclose(frame["positive_probability"], EXPECTED["bundle"], rtol=0, atol=1e-6)
    assert frame["label"].tolist()[:2] == ["positive", "negative"]


def _one_column(texts: list[str]):
    import pandas as pd

    return pd.DataFrame({"text": texts})

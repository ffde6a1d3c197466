"""What ``classify explain`` reads of a LiteRT bundle, without TensorFlow: ids from its tokenizer,
probabilities from its classifier, a bag's features and values from the NumPy twin and the
exported weights, and the attention from the bundle's attention model
(:mod:`classifier.serving.explain_parts`). The Keras original is
:mod:`classifier.explain.keras_view`; the numbers agree within 1e-5
(``tests/explain/test_bundle_view.py``).

Example (a run's bundle)::

    view = BundleView(load_bundle("bundle"))
    view.probabilities(view.encode("A wonderful film.")[None, :3])  # array([[0.07, 0.93]])
"""

from __future__ import annotations

import numpy as np

from classifier.serving.explain_parts import NgramWeights, load_explain_parts
from classifier.serving.litert_engine import BundleModel


class BundleView:
    """A bundle as :mod:`classifier.explain.explanation` reads it; see
    :class:`classifier.explain.explanation.ModelView`.

    Raises:
        ModelError: the bundle lacks explain parts, or they are damaged (one line).
    """

    def __init__(self, bundle: BundleModel):
        self.bundle = bundle
        self.parts = load_explain_parts(bundle)
        self.labels = bundle.labels
        self.tokenizer = bundle.tokenizer
        self.explains = self.parts.explains
        self.layer = self.parts.layer

    def encode(self, text: str) -> np.ndarray:
        return self.tokenizer.encode([text])[0]

    def probabilities(self, token_ids: np.ndarray) -> np.ndarray:
        return self.bundle.predict_ids(token_ids)

    @property
    def ngram_weights(self) -> NgramWeights | None:
        return self.parts.ngrams

    def ngram_values(self, token_ids: np.ndarray):
        ids = np.asarray(token_ids, dtype=np.int64)[None, :]
        features, values = self.parts.ngrams.feature_values(ids)
        return features[0], values[0], self.parts.ngrams.features(ids)[0]

    def attention(self, token_ids: np.ndarray):
        return self.parts.attention(token_ids)

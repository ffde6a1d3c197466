"""The LiteRT bundle of a default-size model against Keras on all 25,000 IMDB test reviews.

The model is the default config (``attention``, 20,000 words adapted on the 15,000 training
reviews, 512 tokens, tail truncation), fitted for one epoch on 5,000 reviews (learning rate 0.01) so that its
probabilities spread as a trained model's do (about 20 s in all). Both sides batch as
``classify predict`` does: sorted by length, 64 per batch, each cut to its longest review.
"""

from __future__ import annotations

import time

import keras
import numpy as np
import pytest

from classifier.config.schema import load_config
from classifier.data.batching import vectorize
from classifier.data.pipeline import build_vectorizer, load_raw_splits
from classifier.models.classifier import build_classifier, build_end_to_end
from classifier.serving.bundle import write_bundle
from classifier.serving.litert_engine import MODEL_FILE, load_bundle
from classifier.serving.predict import predict_texts
from classifier.serving.registry import load_keras_model

pytestmark = pytest.mark.large
FIT_REVIEWS = 5_000
FIT_LEARNING_RATE = 0.01  # ten times the default: one short epoch learns something


@pytest.fixture(scope="module")
def default_model(imdb_data_dir, tmp_path_factory):
    """The default-config model, briefly fitted, saved as .keras and loaded with safe_mode."""
    cfg = load_config(None, [f"data.data_dir={imdb_data_dir}", "data.download=false"])
    keras.utils.set_random_seed(cfg.train.seed)
    raw = load_raw_splits(cfg.data)
    vectorizer = build_vectorizer(cfg.data, raw.train)
    classifier = build_classifier(cfg.model, cfg.data.vocab_size, cfg.data.sequence_length)
    classifier.compile(
        optimizer=keras.optimizers.Adam(FIT_LEARNING_RATE),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    batches = vectorize(
        raw.train.take(FIT_REVIEWS),
        vectorizer,
        cfg.data.batch_size,
        shuffle_seed=0,
        bucket_by_length=True,
    )
    classifier.fit(batches, epochs=1, verbose=0, shuffle=False)  # batches are shuffled
    path = tmp_path_factory.mktemp("default-model") / "model.keras"
    build_end_to_end(vectorizer, classifier).save(path)
    texts = [text.decode("utf-8") for batch, _ in raw.test.batch(1024) for text in batch.numpy()]
    return load_keras_model(path), texts


def test_the_bundle_gives_the_keras_probabilities_on_every_test_review(default_model, tmp_path):
    model, texts = default_model
    assert len(texts) == 25_000
    started = time.perf_counter()
    folder = write_bundle(model, tmp_path / "bundle")
    exported = time.perf_counter() - started
    embeddings = 20_000 * 16 * 4  # the default vocabulary x width, float32: most of the file
    assert embeddings < (folder / MODEL_FILE).stat().st_size < 1.1 * embeddings
    bundle = load_bundle(folder)
    assert (bundle.sequence_length, bundle.truncate, bundle.variant) == (512, "tail", "attention")

    expected = np.array(predict_texts(model, texts, 64))
    actual = np.array(bundle.predict_texts(texts, 64))
    worst = float(np.max(np.abs(actual - expected)))
    assert worst <= 1e-5, f"largest difference {worst:.2g}"
    print(
        f"max abs diff {worst:.2g}; std of P(positive) {np.std(expected):.3f}; export {exported:.1f} s"
    )
    assert np.std(expected) > 0.1  # the fitted model tells reviews apart
    assert np.array_equal(actual >= 0.5, expected >= 0.5)
    assert exported < 60

"""The tokenizer gives every id of ``ReviewVectorizer`` on all test and unlabelled IMDB reviews."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from classifier.config.schema import load_config
from classifier.data.pipeline import ReviewVectorizer, build_vectorizer, load_raw_splits
from classifier.data.source import tfds_load
from classifier.data.tokenizer import Tokenizer

pytestmark = pytest.mark.large

BATCH = 2048  # TextVectorization pads each batch to its longest review before truncation
SPLIT_SIZES = {"test": 25_000, "unsupervised": 50_000}


@pytest.fixture(scope="module")
def cfg(imdb_data_dir):
    return load_config(None, [f"data.data_dir={imdb_data_dir}", "data.download=false"]).data


@pytest.fixture(scope="module")
def vectorizers(cfg) -> dict[str, ReviewVectorizer]:
    """The default configuration's vectorizer (tail), adapted as training does, and its head twin."""
    tail = build_vectorizer(cfg, load_raw_splits(cfg).train)
    assert cfg.truncate == "tail" and len(tail.get_vocabulary()) == cfg.vocab_size
    words = tail.get_vocabulary()[2:]
    head = ReviewVectorizer(cfg.vocab_size, cfg.sequence_length, "head", vocabulary=words)
    return {"tail": tail, "head": head}


@pytest.fixture(scope="module")
def reviews(cfg) -> dict[str, list[bytes]]:
    """Every review of the test and unsupervised splits, as the bytes TFDS stores."""
    texts = {}
    for split in SPLIT_SIZES:
        dataset = tfds_load(split, cfg, as_supervised=True).map(lambda text, _: text)
        texts[split] = [text for batch in dataset.batch(8192) for text in batch.numpy()]
    return texts


@pytest.mark.parametrize("truncate", ["tail", "head"])
@pytest.mark.parametrize("split", list(SPLIT_SIZES))
def test_every_id_equals_review_vectorizer(vectorizers, reviews, split, truncate):
    texts = reviews[split]
    assert len(texts) == SPLIT_SIZES[split]
    vectorizer = vectorizers[truncate]
    tokenizer = Tokenizer(vectorizer.get_vocabulary(), vectorizer.sequence_length, truncate)
    for start in range(0, len(texts), BATCH):
        batch = texts[start : start + BATCH]
        expected = vectorizer(tf.constant(batch)).numpy()
        for inputs in (batch, [text.decode("utf-8") for text in batch]):  # as TFDS, as predict
            wrong = np.flatnonzero((tokenizer.encode(inputs) != expected).any(axis=1))
            assert not wrong.size, f"{split} review {start + wrong[0]}: {batch[wrong[0]][:300]!r}"

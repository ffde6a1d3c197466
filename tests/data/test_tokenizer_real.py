"""The tokenizer gives every id of ``ReviewVectorizer`` on all test and unlabelled IMDB reviews,
with and without sentence ends (``sentences``)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from classifier.config.negation import reserved_words
from classifier.config.schema import load_config
from classifier.data.imdb import tfds_load
from classifier.data.pipeline import ReviewVectorizer, build_vectorizer, load_raw_splits
from classifier.data.tokenizer import Tokenizer

pytestmark = pytest.mark.large

BATCH = 2048  # TextVectorization pads each batch to its longest review before truncation
SPLIT_SIZES = {"test": 25_000, "unsupervised": 50_000}


@pytest.fixture(scope="module")
def cfg(imdb_data_dir):
    return load_config(None, [f"data.data_dir={imdb_data_dir}", "data.download=false"]).data


@pytest.fixture(scope="module")
def vectorizers(cfg) -> dict[str, ReviewVectorizer]:
    """The default configuration's vectorizer (tail), adapted as training does, its head twin,
    and a tail twin with sentence ends (its words after the reserved ones, as ``adapt`` puts them)."""
    tail = build_vectorizer(cfg, load_raw_splits(cfg).train)
    assert cfg.truncate == "tail" and len(tail.get_vocabulary()) == cfg.vocab_size
    words = tail.get_vocabulary()[2:]
    head = ReviewVectorizer(cfg.vocab_size, cfg.sequence_length, "head", vocabulary=words)
    reserved = reserved_words()
    ends = (reserved + [word for word in words if word not in reserved])[: len(words)]
    sentences = ReviewVectorizer(cfg.vocab_size, cfg.sequence_length, "tail", ends, True)
    return {"tail": tail, "head": head, "sentences": sentences}


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
    # The tail's pass also checks the sentence standardization, on the same batches.
    chosen = [vectorizers[truncate]] + ([vectorizers["sentences"]] if truncate == "tail" else [])
    pairs = [
        (v, Tokenizer(v.get_vocabulary(), v.sequence_length, v.truncate, v.sentences))
        for v in chosen
    ]
    for start in range(0, len(texts), BATCH):
        batch = texts[start : start + BATCH]
        decoded = [text.decode("utf-8") for text in batch]
        for vectorizer, tokenizer in pairs:
            expected = vectorizer(tf.constant(batch)).numpy()
            for inputs in (batch, decoded):  # as TFDS, as predict
                wrong = np.flatnonzero((tokenizer.encode(inputs) != expected).any(axis=1))
                assert not wrong.size, (
                    f"{split} review {start + wrong[0]} (sentences={vectorizer.sentences}): "
                    f"{batch[wrong[0]][:300]!r}"
                )

"""What a bundle holds for ``classify explain``: the NumPy twin of the bags' n-gram features
equals the Keras layers, and damaged or missing parts are refused with one line."""

from __future__ import annotations

import json
import shutil

import keras
import numpy as np
import pytest

from classifier.errors import ModelError
from classifier.layers.nb_ngrams import NaiveBayesNgrams
from classifier.layers.ngrams import BagOfNgrams, ngram_features
from classifier.serving.bundle import write_bundle
from classifier.serving.explain_parts import (
    ATTENTION_FILE,
    NGRAMS_FILE,
    NgramWeights,
    has_explain_parts,
    load_explain_parts,
)
from classifier.serving.explain_parts import ngram_features as twin_features
from classifier.serving.litert_engine import MANIFEST, load_bundle
from tests.model_helpers import untrained


def random_ids(rng: np.random.Generator, vocab_size: int) -> np.ndarray:
    """A batch of reviews with repeats, out-of-vocabulary ids (1) and padding at the end."""
    ids = rng.integers(1, vocab_size, size=(5, 30))
    ids[:, 10:14] = ids[:, :4]  # repeated n-grams
    for row, length in enumerate((30, 17, 3, 1, 0)):
        ids[row, length:] = 0
    return ids


@pytest.mark.parametrize(
    ("vocab_size", "buckets", "order"), [(50, 64, 1), (7, 5, 2), (30_000, 4_194_304, 3)]
)
def test_the_numpy_features_are_the_layers(vocab_size, buckets, order):
    ids = random_ids(np.random.default_rng(order), vocab_size)
    expected = keras.ops.convert_to_numpy(ngram_features(ids, vocab_size, buckets, order))
    np.testing.assert_array_equal(twin_features(ids, vocab_size, buckets, order), expected)


@pytest.mark.parametrize(("layer", "outputs"), [("bow", 2), ("nbow", 2), ("nbow", 3)])
def test_the_numpy_values_are_the_layers(layer, outputs):
    rng = np.random.default_rng(outputs)
    vocab_size, buckets = 40, 97
    if layer == "bow":
        bag = BagOfNgrams(vocab_size, buckets, outputs)
    else:
        bag = NaiveBayesNgrams(vocab_size, buckets, outputs, order=3)
    bag.build((None, None))
    bag.scale.assign(rng.normal(0, 2, bag.scale.shape).astype("float32"))
    numpy = keras.ops.convert_to_numpy
    twin = NgramWeights(
        vocab_size, buckets, bag.order, bag.scale_name, numpy(bag.scale),
        numpy(bag.kernel), numpy(bag.bias), np.eye(outputs), np.zeros(outputs),
    )  # fmt: skip
    ids = random_ids(rng, vocab_size)
    features, values = bag.feature_values(ids)
    twin_features_, twin_values = twin.feature_values(ids)
    np.testing.assert_array_equal(twin_features_, numpy(features))
    np.testing.assert_allclose(twin_values, numpy(values), rtol=0, atol=1e-6)
    width = sum(30 - n for n in range(bag.order))  # 30 unigrams, 29 bigrams, ...
    assert twin_values.shape == ((5, width, outputs) if outputs > 2 else (5, width))


@pytest.fixture(scope="module")
def fused_folder(tmp_path_factory):
    """A bundle with both parts: the n-gram weights and the attention model."""
    return write_bundle(untrained("nbow_attention"), tmp_path_factory.mktemp("b") / "bundle")


def test_the_parts_are_described_in_the_manifest(fused_folder):
    manifest = json.loads((fused_folder / MANIFEST).read_text())
    assert manifest["explain"]["explains"] == "contributions+attention"
    assert manifest["explain"]["layer"] == "the attention branch's layer 2 of 2"
    assert manifest["explain"]["ngrams"] == {
        "vocab_size": 9, "buckets": 2**20, "order": 3, "scale_name": "ratio"
    }  # fmt: skip
    parts = load_explain_parts(load_bundle(fused_folder))
    assert parts.ngrams.kernel.shape == (9 + 2**20, 2) and parts.attention is not None
    weights, branch = parts.attention(np.array([2, 3, 4]))
    assert weights.shape == (1, 3, 3) and branch.shape == (2,)  # one head
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=1e-6)


@pytest.mark.parametrize("name", [NGRAMS_FILE, ATTENTION_FILE])
def test_a_changed_or_missing_part_is_one_line(fused_folder, tmp_path, name):
    folder = shutil.copytree(fused_folder, tmp_path / "copy")
    content = (folder / name).read_bytes()
    (folder / name).write_bytes(content[:-10])
    bundle = load_bundle(folder)  # predict needs no explain part: it still loads
    with pytest.raises(ModelError) as raised:
        load_explain_parts(bundle)
    assert str(raised.value) == (
        f"model bundle {folder}: {name} changed since the bundle was written "
        f"({len(content) - 10:,} bytes, {MANIFEST} says {len(content)}; or its SHA-256 "
        "differs): export it again"
    )
    (folder / name).unlink()
    with pytest.raises(ModelError, match=f"^model bundle {folder}: {name} is missing$"):
        load_explain_parts(bundle)


def test_a_bundle_written_before_the_parts(fused_folder, tmp_path):
    folder = shutil.copytree(fused_folder, tmp_path / "copy")
    manifest = json.loads((folder / MANIFEST).read_text())
    del manifest["explain"]
    (folder / MANIFEST).write_text(json.dumps(manifest))
    bundle = load_bundle(folder)
    assert not has_explain_parts(bundle)
    with pytest.raises(ModelError, match="written before bundles held what explain needs"):
        load_explain_parts(bundle)

"""Training knows a bag of n-grams by its variant's kind (the model's name ``imdb_<variant>``),
not by its layer names."""

from __future__ import annotations

import keras
import pytest

from classifier.config import variants
from classifier.config.schema import ModelConfig
from classifier.models.classifier import build_classifier
from classifier.training.ngram_features import ngram_bag, reader


def build(variant: str) -> keras.Model:
    cfg = ModelConfig(variant=variant, ngram_buckets=64, embed_dim=8, num_layers=1, ff_dim=8)
    return build_classifier(cfg, vocab_size=40, sequence_length=16)


@pytest.mark.parametrize("variant", variants.names())
def test_the_bag_and_the_reader_follow_the_variants_kind(variant):
    model, kind = build(variant), variants.get(variant).kind
    bag = ngram_bag(model)
    assert (bag is model.get_layer("bag")) if kind != "reader" else bag is None
    branch = reader(model)
    if kind == "bag+reader":
        assert branch.output is model.get_layer("attention_logits").output
    else:
        assert branch is None


def test_a_model_of_no_known_variant_has_no_bag_even_with_its_layers():
    model = build("nbow_attention")
    other = keras.Model(model.input, model.output, name="not_a_classifier")
    assert ngram_bag(other) is None
    assert reader(other) is None

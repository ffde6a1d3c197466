"""A variant says what it is (``Variant.kind``: an attention reader, a bag of n-grams, or both),
and everything that treats a bag apart asks that instead of looking for layer names."""

from __future__ import annotations

import pytest

from classifier.config import variants
from classifier.config.schema import load_config
from classifier.errors import ConfigError
from tests.conftest import ROOT


def test_the_registered_variants_kinds():
    kinds = {name: variants.get(name).kind for name in variants.names()}
    assert kinds == {
        "attention": "reader",
        "mha": "reader",
        "block": "reader",
        "block_pos": "reader",
        "encoder": "reader",
        "bow": "bag",
        "nbow": "bag",
        "nbow_attention": "bag+reader",
    }


@pytest.mark.parametrize(
    ("kind", "has_bag", "builds", "explains"),
    [
        ("reader", False, "stack", "attention"),
        ("bag", True, "logits", "contributions"),
        ("bag+reader", True, "logits", "contributions+attention"),
    ],
)
def test_a_kind_says_how_the_classifier_is_built_and_explained(kind, has_bag, builds, explains):
    variant = variants.Variant("x", "m:f", "layer", "it", keys=(), kind=kind)
    assert (variant.has_bag, variant.builds, variant.explains) == (has_bag, builds, explains)


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="kind 'bags' is not one of"):
        variants.Variant("x", "m:f", "layer", "it", keys=(), kind="bags")


@pytest.mark.parametrize("recipe", ["bow", "nbow"])
def test_lazy_adam_is_checked_on_a_bag_alone(recipe):
    overrides = ["train.lazy_adam=true", "train.clipnorm=1.0"]
    with pytest.raises(ConfigError, match="train.lazy_adam updates the rows"):
        load_config(ROOT / f"configs/variants/{recipe}.yaml", overrides)
    # A bag with a reader trains as without lazy Adam, and so does an attention reader.
    for variant in ("nbow_attention", "encoder"):
        assert load_config(None, [*overrides, f"model.variant={variant}"]).train.lazy_adam

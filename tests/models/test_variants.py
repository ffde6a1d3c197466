"""The variant registry: every variant is one entry, and a new one added through the registry
alone is validated, trained, labelled in sweeps, compared and explained."""

from __future__ import annotations

import pytest

from classifier.config import variants
from classifier.config.schema import ModelConfig, load_config
from classifier.errors import ConfigError
from classifier.explain.explanation import explain_text
from classifier.layers import MaskedAttention
from classifier.models.classifier import build_classifier, embed
from classifier.serving.registry import load_keras_model
from classifier.sweeps.compare import compare, key_params
from classifier.sweeps.spec import SweepSpec, expand
from classifier.training.train import train
from tests.conftest import ROOT, fixture_data_overrides

EXPERIMENT = "throwaway-variant"


def tiny_stack(cfg, token_ids, mask, vocab_size, sequence_length):
    """One ``keras.layers.Attention`` over the token embeddings: the throwaway variant."""
    x = embed(cfg, token_ids, vocab_size, sequence_length)
    return MaskedAttention(name="tiny_attention")([x, x], mask=[mask, mask])


@pytest.fixture
def tiny():
    variant = variants.register(
        variants.Variant(
            "tiny",
            tiny_stack,
            explained_layer="tiny_attention",
            explained_as="the tiny attention layer",
            keys=("model.embed_dim", "model.dropout"),
            position="none",
        )
    )
    yield variant
    variants.unregister("tiny")


def test_every_variant_has_a_builder_and_an_explained_layer():
    for name in variants.names():
        variant = variants.get(name)
        model = build_classifier(ModelConfig(variant=name), vocab_size=30, sequence_length=8)
        assert model.name == variant.model_name
        assert model.get_layer(variant.explained_layer) is not None
        assert variants.variant_of_model(model.name) is variant


def test_config_names_the_registered_variants(tiny):
    assert load_config(None, ["model.variant=tiny"]).model.variant == "tiny"
    variants.unregister("tiny")
    with pytest.raises(ConfigError, match=r"model.variant='tiny' is not one of attention, mha"):
        load_config(None, ["model.variant=tiny"])


def test_a_throwaway_variant_trains_sweeps_compares_and_explains(
    tiny, store, fixture_data_dir, tmp_path
):
    overrides = [
        *fixture_data_overrides(fixture_data_dir),
        "model.variant=tiny",
        "train.epochs=2",
        "train.learning_rate=0.01",
        "train.registered_model=imdb-tiny",
        f"experiment={EXPERIMENT}",
    ]
    result = train(load_config(None, overrides), echo=lambda line: None)
    assert result.test_metrics["test_accuracy"] > 0

    spec = SweepSpec(
        path=tmp_path / "spec.yaml",
        name="throwaway",
        base=ROOT / "configs" / "smoke.yaml",
        points=[{"model.variant": "tiny"}, {"model.variant": "attention"}],
        grid={"train.seed": [1, 2]},
    )
    assert [point.name for point in expand(spec)] == [
        "tiny seed=1",
        "tiny seed=2",
        "attention seed=1",
        "attention seed=2",
    ]

    (row,) = compare(experiment=EXPERIMENT)
    assert row.variant == "tiny" and row.run_ids == [result.run_id]
    assert row.key_params == "d=16 pos=none"
    assert key_params({"model.variant": "tiny", "model.embed_dim": "8"}) == "d=8 pos=none"

    import mlflow

    local = mlflow.artifacts.download_artifacts(
        run_id=result.run_id, artifact_path="model.keras", dst_path=str(tmp_path)
    )
    explanation = explain_text(load_keras_model(local), "a great and wonderful film")
    assert explanation.layer == "the tiny attention layer" and explanation.heads == 1
    assert explanation.tokens == ["a", "great", "and", "wonderful", "film"]

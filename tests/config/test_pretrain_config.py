"""The ``pretrain`` config section, ``model.init_from`` and the pretraining config files."""

from __future__ import annotations

import pytest

from classifier.config.pretrain import reserved_tokens
from classifier.config.schema import Config, ConfigError, load_config


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("pretrain.objective=bert", "pretrain.objective='bert' is not one of mlm, span"),
        ("pretrain.mask_rate=1.5", "pretrain.mask_rate must be in (0, 1), got 1.5"),
        ("pretrain.noise_density=0", "pretrain.noise_density must be in (0, 1), got 0.0"),
        ("pretrain.epochs=0", "pretrain.epochs must be positive, got 0"),
        ("pretrain.held_out=-1", "pretrain.held_out must be positive, got -1"),
        (
            "pretrain.unlabelled_size=60000",
            "pretrain.unlabelled_size=60000 exceeds the 50,000 reviews of the unsupervised split",
        ),
        (
            "pretrain.held_out=50000",
            "pretrain.held_out=50000 leaves no unlabelled review to pretrain on "
            "(pretrain.unlabelled_size gives 50,000)",
        ),
        ("pretrain.experiment=' '", "pretrain.experiment must not be empty"),
        (
            "pretrain.registered_model=a/b",
            "pretrain.registered_model='a/b' cannot be an MLflow model name",
        ),
        ("model.init_from=''", "model.init_from must not be empty (null: start from scratch)"),
        (
            "model.init_from=ftp://host/model",
            "model.init_from 'ftp://host/model': unsupported scheme 'ftp:'",
        ),
    ],
)
def test_bad_pretrain_values_are_one_line_naming_the_key(override, message):
    with pytest.raises(ConfigError) as raised:
        load_config(None, [override])
    assert str(raised.value).startswith(message)


def test_span_needs_room_for_its_sentinels():
    with pytest.raises(ConfigError, match=r"^data.vocab_size=8 is too small to pretrain with "):
        load_config(None, ["pretrain.objective=span", "data.vocab_size=8"])
    assert reserved_tokens(load_config(None, ["pretrain.objective=span"]).pretrain, 256) == [
        "[START]",
        *(f"[SPAN_{i}]" for i in range(13)),
    ]


def test_pretrain_configs_match_the_encoders_they_fine_tune():
    defaults = Config().pretrain
    assert (defaults.objective, defaults.experiment, defaults.registered_model) == (
        "mlm",
        "imdb-pretrain",
        "imdb-encoder",
    )
    assert load_config(
        None, ["model.variant=encoder", "model.init_from=runs:/0123456789abcdef0123456789abcdef"]
    ).model.init_from
    for pretraining, fine_tuning in [
        ("configs/pretrain.yaml", "configs/variants/encoder.yaml"),
        ("configs/pretrain-smoke.yaml", "configs/smoke.yaml"),
    ]:
        a, b = load_config(pretraining), load_config(fine_tuning)
        for key in ("embed_dim", "num_heads", "ff_dim", "num_layers", "position", "norm_first"):
            assert getattr(a.model, key) == getattr(b.model, key), (pretraining, key)
        assert (a.data.vocab_size, a.data.sequence_length) == (
            b.data.vocab_size,
            b.data.sequence_length,
        )
    smoke = load_config("configs/pretrain-smoke.yaml")
    assert (smoke.model.embed_dim, smoke.model.num_heads, smoke.model.ff_dim) == (16, 2, 64)
    assert (smoke.model.num_layers, smoke.data.vocab_size, smoke.data.sequence_length) == (
        1,
        5000,
        128,
    )

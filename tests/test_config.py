"""Config loading: defaults, extends, overrides, and one message per kind of bad value."""

from __future__ import annotations

import pytest

from classifier.config import Config, ConfigError, load_config

ROOT_CONFIGS = "configs"


def test_default_yaml_is_the_built_in_default():
    assert load_config(f"{ROOT_CONFIGS}/default.yaml") == Config()


def test_smoke_extends_default_and_is_small():
    cfg = load_config(f"{ROOT_CONFIGS}/smoke.yaml")
    assert cfg.data.train_size == 4000 and cfg.data.test_size == 2000
    assert cfg.model.embed_dim == Config().model.embed_dim  # inherited


def test_overrides_parse_yaml_values():
    cfg = load_config(
        None,
        ["model.num_heads=4", "model.dropout=0.25", "data.test_size=null", "model.norm_first=true"],
    )
    assert cfg.model.num_heads == 4
    assert cfg.model.dropout == 0.25
    assert cfg.data.test_size is None
    assert cfg.model.norm_first is True


def test_int_is_accepted_for_a_float_key():
    assert load_config(None, ["train.learning_rate=1"]).train.learning_rate == 1.0


def test_flat_and_hash():
    cfg = Config()
    flat = cfg.flat()
    assert flat["model.num_heads"] == 2 and flat["data.truncate"] == "tail"
    assert cfg.config_hash() == Config().config_hash()
    assert cfg.config_hash() != load_config(None, ["train.seed=7"]).config_hash()


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("model.colour=red", "unknown config key 'model.colour'"),
        ("modle.num_heads=2", "unknown config key 'modle'"),
        ("model.num_heads=four", "model.num_heads must be int, got str 'four'"),
        ("model.num_heads=2.5", "model.num_heads must be int, got float 2.5"),
        ("model.norm_first=1", "model.norm_first must be bool, got int 1"),
        ("data.truncate=3", "data.truncate must be str, got int 3"),
        ("model.num_heads=null", "model.num_heads must not be null"),
        ("model.num_heads=3", "model.embed_dim=16 is not divisible by model.num_heads=3"),
        ("model.num_heads=0", "model.num_heads must be positive, got 0"),
        ("data.batch_size=-8", "data.batch_size must be positive, got -8"),
        ("train.learning_rate=0", "train.learning_rate must be positive, got 0.0"),
        ("data.test_size=0", "data.test_size must be positive, got 0"),
        ("data.val_size=20000", "data.val_size=20000 does not fit: data.train_size=15000 plus"),
        (
            "data.test_size=30000",
            "data.test_size=30000 exceeds the 25,000 reviews of the test split",
        ),
        ("model.variant=lstm", "model.variant='lstm' is not one of attention, mha, block"),
        ("model.position=rope", "model.position='rope' is not one of sinusoidal, learned"),
        ("data.truncate=middle", "data.truncate='middle' is not one of head, tail"),
        ("model.dropout=1.0", "model.dropout must be in [0, 1), got 1.0"),
        ("model=3", "model must be a mapping, got 3"),
    ],
)
def test_bad_values_name_the_key_and_value(override, message):
    with pytest.raises(ConfigError) as raised:
        load_config(None, [override])
    assert message in str(raised.value)


def test_bad_override_syntax():
    with pytest.raises(ConfigError, match="must look like key=value"):
        load_config(None, ["model.num_heads"])


def test_missing_and_malformed_files(tmp_path):
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: [unclosed\n")
    with pytest.raises(ConfigError, match="is not valid YAML"):
        load_config(bad)
    listing = tmp_path / "list.yaml"
    listing.write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="must be a mapping of keys to values"):
        load_config(listing)


def test_extends_merges_sections(tmp_path):
    (tmp_path / "base.yaml").write_text("model:\n  num_heads: 4\n  embed_dim: 32\n")
    child = tmp_path / "child.yaml"
    child.write_text("extends: base.yaml\nmodel:\n  embed_dim: 64\n")
    cfg = load_config(child)
    assert (cfg.model.num_heads, cfg.model.embed_dim) == (4, 64)
    loop = tmp_path / "loop.yaml"
    loop.write_text("extends: loop.yaml\n")
    with pytest.raises(ConfigError, match="extends itself"):
        load_config(loop)

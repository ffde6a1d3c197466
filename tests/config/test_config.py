"""Config loading: defaults, extends, overrides, and one message per kind of bad value."""

from __future__ import annotations

import doctest
import unicodedata

import pytest

from classifier.config.schema import Config, ConfigError, from_dict, load_config

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
        (
            "train.early_stopping_min_delta=-0.001",
            "train.early_stopping_min_delta must not be negative, got -0.001",
        ),
        ("train.weight_decay=-0.01", "train.weight_decay must not be negative, got -0.01"),
        ("train.clipnorm=0", "train.clipnorm must be positive, got 0.0"),
        ("train.clipnorm=big", "train.clipnorm must be float or null, got str 'big'"),
        ("model=3", "model must be a mapping, got 3"),
    ],
)
def test_bad_values_name_the_key_and_value(override, message):
    with pytest.raises(ConfigError) as raised:
        load_config(None, [override])
    assert message in str(raised.value)


def test_lazy_adam_refuses_what_it_does_not_apply_on_a_bag_of_ngrams():
    message = (
        "train.lazy_adam updates the rows of each batch's n-grams with plain Adam: set "
        "train.weight_decay=0, train.clipnorm=null and train.mixed_precision=false, or "
        "train.lazy_adam=false"
    )
    for other in ("train.weight_decay=0.01", "train.clipnorm=1.0", "train.mixed_precision=true"):
        with pytest.raises(ConfigError) as raised:
            load_config("configs/variants/bow.yaml", [other])
        assert str(raised.value) == message
    assert load_config("configs/variants/bow.yaml").train.lazy_adam
    # Ignored by the variants it does not apply to, as model.l2 is.
    assert load_config(None, ["train.lazy_adam=true", "train.clipnorm=1.0"]).train.lazy_adam


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


# --------------------------------------------------------------------------- MLflow names


def _mlflow_can_register(name: str) -> bool:
    """MLflow's own verdict: its registry validator, and ``models:/NAME@ALIAS`` reads back NAME."""
    from mlflow.exceptions import MlflowException
    from mlflow.store.artifact.utils.models import _parse_model_uri
    from mlflow.utils.validation import _validate_model_name

    try:
        _validate_model_name(name)
        by_alias = _parse_model_uri(f"models:/{name}@newest")
        by_version = _parse_model_uri(f"models:/{name}/3")
    except MlflowException:
        return False
    return (by_alias.name, by_alias.alias, by_version.name) == (name, "newest", name)


def _mlflow_can_create_experiment(name: str) -> bool:
    from mlflow.exceptions import MlflowException
    from mlflow.utils.validation import _validate_experiment_name

    try:
        _validate_experiment_name(name)
    except MlflowException:
        return False
    return True


def _accepted(tree: dict) -> bool:
    try:
        from_dict(tree)
    except ConfigError:
        return False
    return True


NAMES = [
    "imdb-sentiment", "imdb_sentiment v2", "a", "1", "a.b", ".a", "a..", "...a", "a@b", "a%b",
    "a#b", "a\\b", "a;b", "latest", "x" * 600, "été", "模型", " a", "a ", "a/b", "/a", "a/",
    "a:b", "models:/a", "", " ", "\t", "\u3000", ".", "..", "...", "..a", "a?b", "?", "a\tb",
    "a\nb", "a\rb", "a\x0bb", "a\x00b", "a\x1fb", "a\x7fb",
]  # fmt: skip


@pytest.mark.parametrize("name", NAMES)
def test_registered_model_rule_agrees_with_mlflow(name):
    ours = _accepted({"train": {"registered_model": name}})
    if any(unicodedata.category(char) == "Cc" for char in name):
        assert not ours  # stricter than MLflow: no control characters in a model name
    else:
        assert ours == _mlflow_can_register(name), name


@pytest.mark.parametrize("name", [*NAMES, "x" * 500, "x" * 501])
def test_experiment_rule_agrees_with_mlflow(name):
    ours = _accepted({"experiment": name})
    if not name.strip():
        assert not ours  # stricter than MLflow: a blank experiment name
    else:
        assert ours == _mlflow_can_create_experiment(name), name


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("train.registered_model=a/b", "train.registered_model='a/b' cannot be an MLflow model"),
        ("train.registered_model=", "train.registered_model must not be empty"),
        ("train.registered_model=..", "train.registered_model='..' cannot be an MLflow model"),
        ("train.registered_model=a?b", "train.registered_model='a?b' cannot be an MLflow model"),
        ("experiment=" + "x" * 501, "experiment is 501 characters long; MLflow takes at most 500"),
    ],
)
def test_names_mlflow_refuses_are_refused_up_front(override, message):
    with pytest.raises(ConfigError) as raised:
        load_config(None, [override])
    assert message in str(raised.value)


# --------------------------------------------------------------------------- numbers


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("train.learning_rate=.nan", "train.learning_rate must be a finite number, got nan"),
        ("train.learning_rate=.inf", "train.learning_rate must be a finite number, got inf"),
        ("train.learning_rate=-.inf", "train.learning_rate must be a finite number, got -inf"),
        ("train.learning_rate=1e999", "train.learning_rate must be a finite number, got inf"),
        ("model.dropout=.nan", "model.dropout must be a finite number, got nan"),
        ("train.learning_rate=nan", "train.learning_rate must be a finite number, got nan"),
        ("model.dropout=-Infinity", "model.dropout must be a finite number, got -inf"),
        ("model.dropout=inf", "model.dropout must be a finite number, got inf"),
        ("model.dropout=-.inf", "model.dropout must be a finite number, got -inf"),
        ("model.dropout=-0.1", "model.dropout must be in [0, 1), got -0.1"),
        ("model.dropout=1", "model.dropout must be in [0, 1), got 1.0"),
        ("model.dropout=5e-1x", "model.dropout must be float, got str '5e-1x'"),
        ("train.learning_rate=" + "9" * 400, "train.learning_rate must be a finite number, got an"),
    ],
)
def test_floats_must_be_finite_and_in_range(override, message):
    with pytest.raises(ConfigError) as raised:
        load_config(None, [override])
    assert message in str(raised.value)


@pytest.mark.parametrize(
    ("text", "value"),
    [("1e-3", 1e-3), ("5E-4", 5e-4), ("+1e3", 1e3), ("2e+2", 200.0), ("3.5e-4", 3.5e-4)],
)
def test_float_keys_read_exponent_notation(text, value):
    # YAML 1.1 (PyYAML) reads 1e-3 as a string: a float key takes it as the number it spells.
    assert load_config(None, [f"train.learning_rate={text}"]).train.learning_rate == value
    assert from_dict({"model": {"dropout": "1e-1"}}).model.dropout == 0.1


def test_float_keys_read_exponent_notation_from_files(tmp_path):
    path = tmp_path / "lr.yaml"
    path.write_text("train:\n  learning_rate: 1e-3\nmodel:\n  dropout: 2E-1\n")
    cfg = load_config(path)
    assert (cfg.train.learning_rate, cfg.model.dropout) == (1e-3, 0.2)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("experiment=1e-3", None),  # a str key keeps the text
        ("train.registered_model=1e3", None),
        ("data.batch_size=1e2", "data.batch_size must be int, got str '1e2'"),
        ("train.learning_rate=1_0e-3", "train.learning_rate must be float, got str '1_0e-3'"),
        ("train.learning_rate=1e", "train.learning_rate must be float, got str '1e'"),
        ("train.learning_rate=-1e-3", "train.learning_rate must be positive, got -0.001"),
    ],
)
def test_only_float_keys_read_number_text(override, message):
    if message is None:
        key, _, text = override.partition("=")
        assert load_config(None, [override]).flat()[key] == text
    else:
        with pytest.raises(ConfigError) as raised:
            load_config(None, [override])
        assert message in str(raised.value)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "data.sequence_length=1000000000000",
            "data.sequence_length=1000000000000 exceeds 100,000",
        ),
        ("data.vocab_size=1000000000000", "data.vocab_size=1000000000000 exceeds 1,000,000"),
        ("data.batch_size=1000000000000", "data.batch_size=1000000000000 exceeds 1,000,000"),
        ("model.num_layers=1000000", "model.num_layers=1000000 exceeds 1,000"),
        ("model.embed_dim=1000000", "data.vocab_size=20000 x model.embed_dim=1000000 gives"),
        (
            "model.embed_dim=60000",  # the embedding fits; one 60,000 x 60,000 projection does not
            "model.embed_dim=60000 x model.embed_dim=60000 gives",
        ),
        ("model.ff_dim=1000000000", "model.embed_dim=16 x model.ff_dim=1000000000 gives"),
        ("train.seed=-1", "train.seed must be between 0 and 4,294,967,295 (2**32 - 1), got -1"),
        ("train.seed=4294967296", "train.seed must be between 0 and 4,294,967,295"),
    ],
)
def test_sizes_no_machine_could_run_are_refused(override, message):
    with pytest.raises(ConfigError) as raised:
        load_config(None, [override])
    assert message in str(raised.value)


def test_large_but_possible_sizes_are_accepted():
    cfg = load_config(
        None,
        [
            "data.sequence_length=100000",
            "data.vocab_size=1000000",
            "data.batch_size=1000000",
            "model.embed_dim=1024",
            "model.ff_dim=65536",
            "model.num_layers=96",
            "train.seed=4294967295",
            "train.epochs=1000000",
        ],
    )
    assert cfg.train.seed == 2**32 - 1 and cfg.data.vocab_size == 1_000_000


def test_the_weight_table_check_names_both_keys():
    with pytest.raises(ConfigError) as raised:
        load_config(None, ["data.vocab_size=1000000", "model.embed_dim=4096"])
    assert str(raised.value).startswith(
        "data.vocab_size=1000000 x model.embed_dim=4096 gives a table of 4,096,000,000 weights"
    )


# --------------------------------------------------------------------------- override syntax


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (".model=1", "override '.model=1': key '.model' has an empty part"),
        ("model.=1", "override 'model.=1': key 'model.' has an empty part"),
        ("model..num_heads=2", "key 'model..num_heads' has an empty part"),
        ("model.variant.x=1", "config key 'model.variant.x': 'model.variant' is a value, not a"),
        ("experiment.x=1", "config key 'experiment.x': 'experiment' is a value, not a section"),
        ("train.seed.a.b=1", "config key 'train.seed.a.b': 'train.seed' is a value, not a"),
    ],
)
def test_override_keys_name_what_is_wrong(override, message):
    with pytest.raises(ConfigError) as raised:
        load_config(None, [override])
    assert message in str(raised.value)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("train.seed=010", "train.seed must be int, got str '010'"),  # YAML 1.1: octal 8
        ("train.seed=1:30", "train.seed must be int, got str '1:30'"),  # YAML 1.1: 90
    ],
)
def test_yaml_11_octal_and_base_60_ints_are_not_misread(override, message):
    with pytest.raises(ConfigError) as raised:
        load_config(None, [override])
    assert message in str(raised.value)
    cfg = load_config(None, ["train.seed=0", "data.batch_size=1_024", "model.embed_dim=0x20"])
    assert (cfg.train.seed, cfg.data.batch_size, cfg.model.embed_dim) == (0, 1024, 32)


def test_a_number_for_a_text_key_says_to_quote_it():
    with pytest.raises(ConfigError) as raised:
        load_config(None, ["experiment=yes"])
    assert (
        str(raised.value)
        == "experiment must be str, got bool True; put it in quotes to keep it as text"
    )
    assert load_config(None, ["experiment='yes'"]).experiment == "yes"
    with pytest.raises(ConfigError, match="got date datetime.date.*put it in quotes"):
        load_config(None, ["experiment=2024-01-31"])
    assert load_config(None, ["experiment=2024-13-45"]).experiment == "2024-13-45"
    with pytest.raises(ConfigError, match="train.epochs must be int, got str '9999"):
        load_config(None, ["train.epochs=" + "9" * 5000])  # over Python's 4,300 digits


def test_booleans_take_yaml_words_but_not_quoted_text():
    # PyYAML reads yes/no/on/off as booleans already; quoted text stays text and is refused.
    cfg = load_config(None, ["model.norm_first=yes", "model.scale_embeddings=off"])
    assert (cfg.model.norm_first, cfg.model.scale_embeddings) == (True, False)
    with pytest.raises(ConfigError, match=r"^model.norm_first must be bool, got str 'true'$"):
        load_config(None, ["model.norm_first='true'"])


def test_module_examples_run():
    import classifier.config.schema

    assert doctest.testmod(classifier.config.schema).failed == 0


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["model.negation=1.5"], "model.negation must be in [0, 1], got 1.5"),
        (["model.contrast=0"], "model.contrast must be in (0, 1], got 0.0"),
        (["model.negation_words=-1"], "model.negation_words must not be negative, got -1"),
        (
            ["model.variant=nbow", "model.negation=0.5"],
            "model.negation and model.contrast need the sentence ends and scope words that "
            "data.sentences=true keeps",
        ),
        (
            ["data.sentences=true", "model.contrast=0.5"],
            "model.negation and model.contrast weigh the n-grams of nbow and nbow_attention; "
            "model.variant='attention' has none (set them to 0 and 1)",
        ),
        (
            ["data.negation_phrases=true"],
            "data.negation_phrases reads 'far from' as 'far not' in the standardization that "
            "data.sentences=true chooses: set it too",
        ),
        (
            ["data.sentences=true", "data.vocab_size=20"],
            "data.vocab_size must be at least 41 with data.sentences (padding, OOV, 38 "
            "punctuation and scope words, one word), got 20",
        ),
    ],
)
def test_negation_needs_a_bag_and_the_sentence_ends(overrides, message):
    with pytest.raises(ConfigError) as raised:
        load_config(None, overrides)
    assert str(raised.value) == message
    sentences = ["data.sentences=true", "model.negation=0.5", "model.contrast=0.25"]
    assert load_config(None, ["model.variant=nbow", *sentences]).model.negation == 0.5

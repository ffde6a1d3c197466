"""Typed, validated configuration loaded from ``configs/*.yaml``.

A config file may name another with ``extends: other.yaml`` (relative to itself); its keys are
merged over that file's; command-line overrides (``--set model.num_heads=4``) come last. Every
key, type and value is checked (a bad one: :class:`ConfigError` naming the key); the files are
read by :mod:`classifier.config.yaml_files`, ``extends`` included (sweep specs too).

YAML is read as PyYAML's safe loader does (YAML 1.1: ``yes``/``no`` are booleans), but a repeated
key is an error, ``010`` and ``1:30`` stay text (not 8 and 90), and a float key takes a number
written as text (``1e-3``, which YAML 1.1 leaves a string) as that number.

Example:
    >>> cfg = load_config("configs/default.yaml", ["model.num_heads=4"])
    >>> cfg.model.num_heads
    4
"""

from __future__ import annotations

import dataclasses
import math
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from classifier.config import variants
from classifier.config.checks import (
    check_experiment_name,
    check_lazy_adam,
    check_model_name,
    check_negation,
    check_source,
)
from classifier.config.hashing import config_hash, config_hashes
from classifier.config.pretrain import PretrainConfig, validate_pretrain
from classifier.config.uris import check_init_from
from classifier.config.yaml_files import YamlLoader, read_config_file, typed_value
from classifier.errors import ConfigError

POSITIONS, TRUNCATE_SIDES = ("sinusoidal", "learned"), ("head", "tail")
LABELS = ("negative", "positive")  # label 0, label 1
#: Sizes of the TFDS ``train`` split (training and validation reviews) and ``test`` split.
IMDB_TRAIN_REVIEWS = IMDB_TEST_REVIEWS = 25_000
#: Upper bounds far past any use, so that a slip (10**12) fails here and not deep in TensorFlow:
#: 25,000 reviews hold far fewer distinct words; the longest review has about 2,500 words (and
#: batches are padded to ``sequence_length`` before trimming); no batch holds 1,000,000 texts.
MAX_SIZES = {
    "data.vocab_size": 1_000_000,
    "data.sequence_length": 100_000,
    "data.batch_size": 1_000_000,
    "model.num_layers": 1_000,
    "model.ngram_buckets": 100_000_000,
}
#: The weight tables a config sizes: token embeddings, learned positions, attention projections,
#: feed-forward. None may hold more than MAX_TABLE_WEIGHTS numbers: 8 GiB of float32, 32 GiB
#: while Adam trains it (weights, gradient, two moments).
WEIGHT_TABLES = (
    ("data.vocab_size", "model.embed_dim"),
    ("data.sequence_length", "model.embed_dim"),
    ("model.embed_dim", "model.embed_dim"),
    ("model.embed_dim", "model.ff_dim"),
)
MAX_TABLE_WEIGHTS = 2**31 - 1
MAX_SEED = 2**32 - 1  # keras.utils.set_random_seed (NumPy) takes seeds up to it


@dataclass
class DataConfig:
    """Where the reviews come from and how they become token ids.

    ``source`` None is the embedded IMDB data (TFDS ``imdb_reviews``, cut by ``train_size``,
    ``val_size`` and ``test_size``); else the user's labelled texts, which
    :mod:`classifier.data.labelled` plans into splits (its docstring says how).
    """

    data_dir: str | None = None  # None: TFDS_DATA_DIR or TFDS' default (~/tensorflow_datasets)
    download: bool = True  # let TFDS download the data when it is not found
    train_size: int = 15_000  # first reviews of the TFDS train split
    val_size: int = 10_000  # the next reviews of the train split
    test_size: int | None = None  # None: all 25,000 test reviews
    source: str | None = None  # None: IMDB; else a labelled file or class folders (a path)
    validation: str | None = None  # a file or folder of validation texts (source's format)
    test: str | None = None  # a file or folder of test texts, read only for the final evaluation
    validation_fraction: float = 0.1  # of source, stratified, where validation is not given
    test_fraction: float = 0.1  # of source, stratified, where test is not given
    text_field: str = "text"  # the column (or JSON key) holding the text
    label_field: str = "label"  # the column (or JSON key) holding the label
    labels: str | None = None  # the classes in order, comma-separated (None: sorted)
    label_map: str | None = None  # labels renamed, merged or dropped: "0=negative, 1=negative, 2="
    phrases: bool = False  # a treebank source trains on its labelled phrases, not sentences only
    extra: str | None = None  # more labelled texts for training only (a treebank: its phrases)
    extra_label_map: str | None = None  # data.extra's labels as the source's classes
    sentences: bool = False  # sentence ends kept as "." tokens, scope words at fixed ids
    spelling: int = 0  # inputs of fewer words read a misspelt word as a known one (0: none)
    negation_phrases: bool = False  # with sentences: "far from", "anything but" read "far not"
    vocab_size: int = 20_000
    sequence_length: int = 512  # the 90th-percentile review has 455 words
    truncate: str = "tail"  # which end of a long review to keep: head | tail
    batch_size: int = 64  # 512 (the reference) learns far slower per epoch; see README
    bucket_by_length: bool = True  # batch reviews of similar length, padded to the longest only


@dataclass
class ModelConfig:
    """Which classifier to build and its sizes."""

    variant: str = "attention"  # the best validation accuracy of the five (README: results)
    embed_dim: int = 16
    num_heads: int = 2
    ff_dim: int = 64
    num_layers: int = 2  # encoder layers (variant "encoder" only)
    dropout: float = 0.1
    position: str = "sinusoidal"  # positional signal of variant "encoder": sinusoidal | learned
    scale_embeddings: bool = False  # multiply token embeddings by sqrt(embed_dim), as the paper
    norm_first: bool = False  # pre-LN instead of the paper's post-LN
    ngram_buckets: int = 2**20  # hashed n-grams of "bow" (pairs), "nbow" and "nbow_attention"
    ngram_order: int = 3  # the longest n-gram of variants "nbow" and "nbow_attention" (1 to 3)
    negation: float = 0.0  # nbow: an n-gram in a negation's scope counts -negation times its own
    contrast: float = 1.0  # nbow: the weight of n-grams before "but" in their sentence
    negation_words: int = 0  # nbow: the most words a negation's scope holds (0: its clause)
    short_length: int = 0  # nbow: inputs of fewer token ids are sentences, read in their own block
    letters: int = 0  # nbow with short_length: letter 3-5-grams a sentence's word adds, at most
    letter_weight: float = 1.0  # nbow with letters: a letter n-gram's value against a word's
    own_negated_letters: bool = True  # nbow: a negated letter n-gram adds a feature of its own
    concessive: bool = False  # nbow: "Although A, B" weighs A as words before "but" are
    sentences_as_reviews: bool = False  # nbow: a sentence's n-grams in the reviews' block as well
    opening_contrast: bool = False  # nbow: "A. But B" weighs A as words before "but" are
    l2: float = 1e-4  # L2 penalty on the weights of variant "bow" (a logistic regression's 1/Cn)
    init_from: str | None = None  # a pretrained encoder or classifier: models:/, runs:/, path


@dataclass
class TrainConfig:
    """How one training run goes."""

    epochs: int = 20  # attention learns slowly; early stopping ends the others sooner
    learning_rate: float = 1e-3
    seed: int = 42
    early_stopping_patience: int | None = 3  # None: train all epochs; the best is kept
    early_stopping_min_delta: float = 0.0  # better = val_accuracy above the best by more than it
    refit: bool = True  # then train afresh on train + validation for the best epoch count
    registered_model: str = "imdb-sentiment"
    mixed_precision: bool = False  # float16 compute, float32 weights (for a GPU; slow on CPU)
    weight_decay: float = 0.0  # > 0: AdamW's decoupled weight decay (0: plain Adam)
    clipnorm: float | None = None  # clip each gradient to this L2 norm (null: no clipping)
    lazy_adam: bool = False  # bow, nbow: Adam moves each batch's kernel rows alone (XLA)
    keep_checkpoint: bool = False  # a finished run keeps its last checkpoint (else deleted)


@dataclass
class Config:
    """A whole run: the MLflow experiment plus data, model, training and pretraining settings."""

    experiment: str = "imdb-classifier"
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    pretrain: PretrainConfig = field(default_factory=PretrainConfig)

    def to_dict(self) -> dict[str, Any]:
        """The config as nested plain dicts (what ``configs/*.yaml`` holds)."""
        return dataclasses.asdict(self)

    def flat(self) -> dict[str, Any]:
        """The config as ``{"model.num_heads": 2, ...}``: the form MLflow params take."""
        return flatten(self.to_dict())

    def config_hash(self) -> str:
        """A short stable hash of the config (:mod:`classifier.config.hashing`)."""
        return config_hash(self)

    def config_hashes(self) -> tuple[str, str]:
        """:meth:`config_hash`, then the hash of the same run recorded before pretraining keys
        were added (:func:`classifier.config.hashing.config_hashes`)."""
        return config_hashes(self)


def flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Flatten nested dicts into dotted keys: ``{"a": {"b": 1}}`` -> ``{"a.b": 1}``."""
    out: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def load_config(
    path: str | Path | None = None,
    overrides: list[str] | tuple = (),
    settings: Mapping[str, Any] | None = None,
) -> Config:
    """Load, merge and validate a config.

    Args:
        path: a YAML file, or None for the built-in defaults.
        overrides: ``"dotted.key=value"`` strings; values are parsed as YAML (``4``, ``true``,
            ``null``, ``0.5``).
        settings: ``{"dotted.key": value}`` with values already parsed, applied after
            ``overrides`` (a sweep's points).

    Raises:
        ConfigError: on a missing file, bad YAML, unknown key, wrong type or impossible value.
    """
    tree = read_config_file(Path(path)) if path is not None else {}
    for item in overrides:
        _set_dotted(tree, *_parse_override(item))
    for key, value in (settings or {}).items():
        _set_dotted(tree, key, value)
    return from_dict(tree)


def from_dict(tree: dict[str, Any]) -> Config:
    """Build and validate a :class:`Config` from nested dicts (missing keys take defaults)."""
    config = _build(Config, tree, prefix="")
    validate(config)
    return config


def validate(config: Config) -> None:
    """Reject values no run could use; each message names the key and the value."""
    flat = config.flat()
    for key, value in flat.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{key} must be a finite number, got {value!r}")
    d, m, t = config.data, config.model, config.train
    for key, value in {
        "data.train_size": d.train_size,
        "data.val_size": d.val_size,
        "data.test_size": d.test_size,
        "data.vocab_size": d.vocab_size,
        "data.sequence_length": d.sequence_length,
        "data.batch_size": d.batch_size,
        "model.embed_dim": m.embed_dim,
        "model.num_heads": m.num_heads,
        "model.ff_dim": m.ff_dim,
        "model.num_layers": m.num_layers,
        "model.ngram_buckets": m.ngram_buckets,
        "train.epochs": t.epochs,
        "train.learning_rate": t.learning_rate,
        "train.early_stopping_patience": t.early_stopping_patience,
    }.items():
        if value is not None and value <= 0:
            raise ConfigError(f"{key} must be positive, got {value!r}")
    for key, limit in MAX_SIZES.items():
        if flat[key] > limit:
            raise ConfigError(f"{key}={flat[key]} exceeds {limit:,}, far more than any run can use")
    for key_a, key_b in WEIGHT_TABLES:
        if (weights := flat[key_a] * flat[key_b]) > MAX_TABLE_WEIGHTS:
            raise ConfigError(
                f"{key_a}={flat[key_a]} x {key_b}={flat[key_b]} gives a table of {weights:,} "
                f"weights; one table holds at most {MAX_TABLE_WEIGHTS:,} (8 GiB of float32)"
            )
    if not 0 <= t.seed <= MAX_SEED:
        raise ConfigError(
            f"train.seed must be between 0 and {MAX_SEED:,} (2**32 - 1), got {t.seed}"
        )
    if not 0 <= d.spelling <= d.sequence_length:
        raise ConfigError(
            f"data.spelling counts an input's words: 0 to data.sequence_length "
            f"({d.sequence_length}), got {d.spelling}"
        )
    if d.vocab_size < 3:
        raise ConfigError(
            f"data.vocab_size must be at least 3 (padding, OOV, one word), got {d.vocab_size}"
        )
    check_source(d)
    if d.train_size + d.val_size > IMDB_TRAIN_REVIEWS:
        raise ConfigError(
            f"data.val_size={d.val_size} does not fit: data.train_size={d.train_size} plus "
            f"data.val_size={d.val_size} exceeds the {IMDB_TRAIN_REVIEWS:,} reviews of the train split"
        )
    if d.test_size is not None and d.test_size > IMDB_TEST_REVIEWS:
        raise ConfigError(
            f"data.test_size={d.test_size} exceeds the {IMDB_TEST_REVIEWS:,} reviews of the test split"
        )
    if d.truncate not in TRUNCATE_SIDES:
        raise ConfigError(f"data.truncate={d.truncate!r} is not one of {', '.join(TRUNCATE_SIDES)}")
    if m.variant not in variants.names():
        raise ConfigError(
            f"model.variant={m.variant!r} is not one of {', '.join(variants.names())}"
        )
    if m.position not in POSITIONS:
        raise ConfigError(f"model.position={m.position!r} is not one of {', '.join(POSITIONS)}")
    if m.embed_dim % m.num_heads != 0:
        raise ConfigError(
            f"model.embed_dim={m.embed_dim} is not divisible by model.num_heads={m.num_heads}"
        )
    if m.ngram_order not in (1, 2, 3):
        raise ConfigError(f"model.ngram_order must be 1, 2 or 3, got {m.ngram_order!r}")
    for key in ("model.l2", "train.weight_decay", "train.early_stopping_min_delta"):
        if flat[key] < 0:
            raise ConfigError(f"{key} must not be negative, got {flat[key]!r}")
    if t.clipnorm is not None and t.clipnorm <= 0:
        raise ConfigError(f"train.clipnorm must be positive, got {t.clipnorm!r}")
    check_lazy_adam(t, bag_of_ngrams=variants.get(m.variant).kind == "bag")
    check_negation(d, m)
    if not 0.0 <= m.dropout < 1.0:
        raise ConfigError(f"model.dropout must be in [0, 1), got {m.dropout!r}")
    if m.init_from is not None:
        check_init_from(m.init_from, m.variant)
    check_experiment_name("experiment", config.experiment)
    check_experiment_name("pretrain.experiment", config.pretrain.experiment)
    check_model_name("train.registered_model", t.registered_model)
    check_model_name("pretrain.registered_model", config.pretrain.registered_model)
    validate_pretrain(config.pretrain, d.vocab_size, d.sequence_length)


def _parse_override(item: str) -> tuple[str, Any]:
    key, sep, text = item.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"override {item!r} must look like key=value, e.g. model.num_heads=4")
    if "" in key.split("."):
        raise ConfigError(f"override {item!r}: key {key!r} has an empty part")
    section: Any = Config
    parts = key.split(".")
    for depth, part in enumerate(parts[:-1], 1):
        hint = typing.get_type_hints(section).get(part)
        if hint is None:
            break  # an unknown key: _build names the keys the section takes
        if not dataclasses.is_dataclass(hint):
            raise ConfigError(
                f"config key {key!r}: {'.'.join(parts[:depth])!r} is a value, not a section"
            )
        section = hint
    try:
        value = yaml.load(text, Loader=YamlLoader) if text.strip() else ""
    except (yaml.YAMLError, ValueError):  # ValueError: 2024-13-45, an int of 4,301 digits
        value = text
    return key, value


def _set_dotted(tree: dict[str, Any], key: str, value: Any) -> None:
    *parents, leaf = key.split(".")
    node = tree
    for part in parents:
        if node.get(part) is None:  # absent, or a section whose keys are all commented out
            node[part] = {}
        node = node[part]
        if not isinstance(node, dict):
            raise ConfigError(f"config key {key!r}: {part!r} is a value, not a section")
    node[leaf] = value


def _build(cls: type, tree: Any, prefix: str) -> Any:
    section = prefix.rstrip(".") or "config"
    if not isinstance(tree, dict):
        raise ConfigError(f"{section} must be a mapping, got {tree!r}")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(map(str, set(tree) - names))
    if unknown:
        raise ConfigError(
            f"unknown config key '{prefix}{unknown[0]}'; {section} takes {', '.join(sorted(names))}"
        )
    values = {}
    for name, value in tree.items():
        hint = hints[name]
        if dataclasses.is_dataclass(hint):
            values[name] = _build(hint, {} if value is None else value, f"{prefix}{name}.")
        else:
            values[name] = typed_value(f"{prefix}{name}", value, hint)
    return cls(**values)

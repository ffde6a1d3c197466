"""Typed, validated configuration loaded from ``configs/*.yaml``.

A config file may name another with ``extends: other.yaml`` (relative to itself); its keys are
merged over that file's. Command-line overrides (``--set model.num_heads=4``) come last. Every
key, type and value is checked, and a bad one raises :class:`ConfigError` naming the key.

Example:
    >>> cfg = load_config("configs/default.yaml", ["model.num_heads=4"])
    >>> cfg.model.num_heads
    4
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from classifier.errors import ConfigError
from classifier.models import variants

POSITIONS = ("sinusoidal", "learned")
TRUNCATE_SIDES = ("head", "tail")
#: Size of the TFDS ``train`` split, from which both training and validation reviews are taken.
IMDB_TRAIN_REVIEWS = 25_000
IMDB_TEST_REVIEWS = 25_000


@dataclass
class DataConfig:
    """Where the reviews come from and how they become token ids."""

    data_dir: str | None = None  # None: TFDS_DATA_DIR or TFDS' default (~/tensorflow_datasets)
    download: bool = True  # let TFDS download the data when it is not found
    train_size: int = 15_000  # first reviews of the TFDS train split
    val_size: int = 10_000  # the next reviews of the train split
    test_size: int | None = None  # None: all 25,000 test reviews
    vocab_size: int = 10_000
    sequence_length: int = 256
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


@dataclass
class TrainConfig:
    """How one training run goes."""

    epochs: int = 20  # attention learns slowly; early stopping ends the others sooner
    learning_rate: float = 1e-3
    seed: int = 42
    early_stopping_patience: int | None = 3  # None: train all epochs; the best is kept
    registered_model: str = "imdb-sentiment"


@dataclass
class Config:
    """A whole run: the MLflow experiment plus data, model and training settings."""

    experiment: str = "imdb-classifier"
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)

    def to_dict(self) -> dict[str, Any]:
        """The config as nested plain dicts (what ``configs/*.yaml`` holds)."""
        return dataclasses.asdict(self)

    def flat(self) -> dict[str, Any]:
        """The config as ``{"model.num_heads": 2, ...}``: the form MLflow params take."""
        return flatten(self.to_dict())

    def config_hash(self) -> str:
        """A short stable hash of the resolved config, to recognise the same run again."""
        text = json.dumps(self.to_dict(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:12]


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
    tree = _read_yaml(Path(path)) if path is not None else {}
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
        "train.epochs": t.epochs,
        "train.learning_rate": t.learning_rate,
        "train.early_stopping_patience": t.early_stopping_patience,
    }.items():
        if value is not None and value <= 0:
            raise ConfigError(f"{key} must be positive, got {value!r}")
    if d.vocab_size < 3:
        raise ConfigError(
            f"data.vocab_size must be at least 3 (padding, OOV, one word), got {d.vocab_size}"
        )
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
    if not 0.0 <= m.dropout < 1.0:
        raise ConfigError(f"model.dropout must be in [0, 1), got {m.dropout!r}")
    if not config.experiment.strip():
        raise ConfigError("experiment must not be empty")


def _read_yaml(path: Path, seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    if path.resolve() in seen:
        raise ConfigError(f"config {path} extends itself")
    try:
        tree = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as error:
        reason = str(error).replace("\n", " ")
        raise ConfigError(f"config {path} is not valid YAML: {reason}") from None
    if not isinstance(tree, dict):
        raise ConfigError(f"config {path} must be a mapping of keys to values")
    base = tree.pop("extends", None)
    if base is None:
        return tree
    merged = _read_yaml(path.parent / base, (*seen, path.resolve()))
    _merge(merged, tree)
    return merged


def _merge(base: dict[str, Any], update: dict[str, Any]) -> None:
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value


def _parse_override(item: str) -> tuple[str, Any]:
    key, sep, text = item.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"override {item!r} must look like key=value, e.g. model.num_heads=4")
    try:
        value = yaml.safe_load(text) if text.strip() else ""
    except yaml.YAMLError:
        value = text
    return key.strip(), value


def _set_dotted(tree: dict[str, Any], key: str, value: Any) -> None:
    *parents, leaf = key.split(".")
    node = tree
    for part in parents:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(f"config key {key!r}: {part!r} is a value, not a section")
    node[leaf] = value


def _build(cls: type, tree: Any, prefix: str) -> Any:
    section = prefix.rstrip(".") or "config"
    if not isinstance(tree, dict):
        raise ConfigError(f"{section} must be a mapping, got {tree!r}")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(tree) - names)
    if unknown:
        raise ConfigError(
            f"unknown config key '{prefix}{unknown[0]}'; {section} takes {', '.join(sorted(names))}"
        )
    values = {}
    for name, value in tree.items():
        hint = hints[name]
        if dataclasses.is_dataclass(hint):
            values[name] = _build(hint, value, f"{prefix}{name}.")
        else:
            values[name] = _check_type(f"{prefix}{name}", value, hint)
    return cls(**values)


def _check_type(key: str, value: Any, hint: Any) -> Any:
    allowed = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    if value is None:
        if type(None) in allowed:
            return None
        raise ConfigError(f"{key} must not be null")
    for kind in allowed:
        if kind is bool and isinstance(value, bool):
            return value
        if kind is int and isinstance(value, int) and not isinstance(value, bool):
            return value
        if kind is float and isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        if kind is str and isinstance(value, str):
            return value
    expected = " or ".join("null" if k is type(None) else k.__name__ for k in allowed)
    raise ConfigError(f"{key} must be {expected}, got {type(value).__name__} {value!r}")

"""How a run's config is recognised again: a short hash of the resolved config.

A sweep finds its finished points by this hash (the ``config_hash`` tag of every training run),
so a key added to the config must not change the hash of a config that leaves it alone. One
rule does it: the keys of :data:`HASHED` are always hashed, and every other key is hashed only
while it is away from its default (read from the config's dataclasses). A key added with a
default therefore needs nothing here, and a config that sets it hashes apart.

:data:`HASHED` is frozen: the config's keys when the rule was made (a section whose keys all
leave the hash leaves with them). Runs recorded before pretraining came (commit 91200a2) also
lacked the :data:`PRETRAINING` keys: :func:`config_hashes` gives the hash such a run carries
too, and a sweep looks for either.

Example:
    >>> from classifier.config.schema import Config
    >>> len(config_hash(Config()))
    12
    >>> config_hashes(Config())[0] == config_hash(Config())
    True
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Collection, Iterator
from typing import Any

#: The keys every hash holds, whatever their value. Frozen: never add to it.
HASHED: frozenset[str] = frozenset(
    f"{section}.{name}" if section else name
    for section, names in {
        "": "experiment",
        "data": "data_dir download train_size val_size test_size vocab_size sequence_length"
        " truncate batch_size bucket_by_length",
        "model": "variant embed_dim num_heads ff_dim num_layers dropout position scale_embeddings"
        " norm_first ngram_buckets l2 init_from",
        "train": "epochs learning_rate seed early_stopping_patience refit registered_model",
        "pretrain": "objective experiment registered_model unlabelled_size held_out epochs"
        " learning_rate mask_rate noise_density mean_span_length",
    }.items()
    for name in names.split()
)
#: The keys (and sections) pretraining brought: runs recorded before them lack them.
PRETRAINING = ("model.init_from", "pretrain")


def config_hash(config: Any, hashed: Collection[str] = HASHED) -> str:
    """A short stable hash of a config (a dataclass): the ``hashed`` keys, and every other key
    that is away from its default."""
    tree: dict[str, Any] = {}
    for key, value, default in _leaves(config):
        if key in hashed or value != default:
            *sections, name = key.split(".")
            node = tree
            for section in sections:
                node = node.setdefault(section, {})
            node[name] = value
    return hashlib.sha256(json.dumps(tree, sort_keys=True).encode()).hexdigest()[:12]


def config_hashes(config: Any) -> tuple[str, str]:
    """The config's hash, then the hash a run of it recorded before the :data:`PRETRAINING`
    keys came carries (the same hash again where one of them is away from its default: no
    such run can exist)."""
    now = config_hash(config)
    if any(_pretraining(key) and value != default for key, value, default in _leaves(config)):
        return now, now
    return now, config_hash(config, {key for key in HASHED if not _pretraining(key)})


def _pretraining(key: str) -> bool:
    return any(key == name or key.startswith(f"{name}.") for name in PRETRAINING)


def _leaves(config: Any, prefix: str = "") -> Iterator[tuple[str, Any, Any]]:
    """Every key of a config dataclass as ``(dotted key, value, default)``, in plain JSON form
    (a section, a nested dataclass, is walked into)."""
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        if dataclasses.is_dataclass(value):
            yield from _leaves(value, f"{prefix}{field.name}.")
            continue
        if field.default is not dataclasses.MISSING:
            default = field.default
        elif field.default_factory is not dataclasses.MISSING:
            default = field.default_factory()
        else:
            default = dataclasses.MISSING  # a required key: always away from a default
        yield f"{prefix}{field.name}", _plain(value), _plain(default)


def _plain(value: Any) -> Any:
    """``value`` as JSON reads it back (a tuple a list), so that equal values compare equal."""
    if value is dataclasses.MISSING:
        return value
    return json.loads(json.dumps(value))

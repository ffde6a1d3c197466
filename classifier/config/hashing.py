"""How a run's config is recognised again: a short hash of the resolved config.

A sweep finds its finished points by this hash (the ``config_hash`` tag of every training run).
A key added to the config later would change every hash, and a sweep continued after the
upgrade would train its finished points again. So keys added later are left out of the hash
while they hold the value every earlier run had:

- :data:`LATER_KEYS`, added since this rule: left out of :func:`config_hash` itself.
- :data:`EARLIER_KEYS`, added before it (commit 91200a2, with pretraining): the runs recorded
  since hash them, the runs before lack them. :func:`config_hashes` gives both hashes, and a
  sweep looks for either.

Example:
    >>> from classifier.config.schema import Config
    >>> len(config_hash(Config().to_dict()))
    12
    >>> config_hashes(Config().to_dict())[0] == config_hash(Config().to_dict())
    True
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from typing import Any

from classifier.config.pretrain import PretrainConfig

#: Keys added after runs were recorded, with the value every earlier run had.
LATER_KEYS: dict[str, Any] = {
    "train.mixed_precision": False,
    "train.weight_decay": 0.0,
    "train.clipnorm": None,
    "model.ngram_order": 3,
    "data.source": None,
    "data.validation": None,
    "data.test": None,
    "data.validation_fraction": 0.1,
    "data.test_fraction": 0.1,
    "data.text_field": "text",
    "data.label_field": "label",
    "data.labels": None,
    "train.early_stopping_min_delta": 0.0,
    "train.lazy_adam": False,
}
#: Keys added before :data:`LATER_KEYS` existed, with the value runs recorded before them had
#: (the pretraining section at its defaults: training ignores it).
EARLIER_KEYS: dict[str, Any] = {
    "model.init_from": None,
    "pretrain": dataclasses.asdict(PretrainConfig()),
}


def config_hash(tree: Mapping[str, Any], left_out: Mapping[str, Any] = LATER_KEYS) -> str:
    """A short stable hash of a config's nested dict, without the ``left_out`` keys that hold
    their given value."""
    tree = json.loads(json.dumps(tree))  # a deep copy
    for key, value in left_out.items():
        section, name = _node(tree, key)
        if section[name] == value:
            del section[name]
    return hashlib.sha256(json.dumps(tree, sort_keys=True).encode()).hexdigest()[:12]


def config_hashes(tree: Mapping[str, Any]) -> tuple[str, str]:
    """The config's hash, then the hash a run of it recorded before :data:`EARLIER_KEYS` were
    added carries (the same hash again where one of them changed: no such run can exist)."""
    now = config_hash(tree)
    if any(_value(tree, key) != value for key, value in EARLIER_KEYS.items()):
        return now, now
    return now, config_hash(tree, {**LATER_KEYS, **EARLIER_KEYS})


def _node(tree: Mapping[str, Any], key: str) -> tuple[Any, str]:
    """The dict that holds a dotted ``key`` (``model.init_from``, ``pretrain``), and its name."""
    *sections, name = key.split(".")
    for section in sections:
        tree = tree[section]
    return tree, name


def _value(tree: Mapping[str, Any], key: str) -> Any:
    section, name = _node(tree, key)
    return section[name]

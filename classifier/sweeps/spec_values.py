"""The values of a sweep spec: dotted config keys mapped to single values, checked with one line
naming the key (:mod:`classifier.sweeps.spec` reads the spec), and written back as YAML words.

Example:
    >>> describe({"model.variant": "encoder", "train.seed": 1})
    'model.variant=encoder train.seed=1'
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import yaml

from classifier.config.schema import flatten
from classifier.errors import ConfigError

#: The key of a point that names the recipe it starts from (``configs/variants/NAME.yaml``).
RECIPE = "recipe"


def describe(overrides: Mapping[str, Any]) -> str:
    """Overrides as ``key=value`` words (YAML spelling of the values).

    Example:
        >>> describe({"model.variant": "encoder", "train.seed": 1})
        'model.variant=encoder train.seed=1'
    """
    return " ".join(f"{key}={yaml_value(value)}" for key, value in overrides.items()) or "-"


def text_value(where: str, key: str, value: Any) -> str:
    """``value`` if it is a non-empty string, else a :class:`ConfigError` naming ``key``."""
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: {key} must be a non-empty string, got {value!r}")
    return value


def settings_of(where: str, key: str, tree: Any) -> dict[str, Any]:
    """Check a mapping of dotted config keys to values (nested mappings are flattened)."""
    if not isinstance(tree, dict):
        raise ConfigError(f"{where}: {key} must map config keys to values, got {tree!r}")
    settings = {}
    for name, value in flatten(tree).items():
        check_key(where, f"{key}.{name}", name)
        settings[str(name)] = scalar_value(where, f"{key}.{name}", value)
    return settings


def check_key(where: str, path: str, key: Any) -> None:
    """Refuse what a point, an override or the grid cannot set: a key that is not a dotted
    string, ``recipe`` (a point's own), ``experiment`` and ``extends`` (the spec's)."""
    if not isinstance(key, str):
        raise ConfigError(f"{where}: {path}: config keys are dotted strings, got {key!r}")
    if key == RECIPE:
        raise ConfigError(
            f"{where}: {path}: a recipe is named by a point ({{recipe: NAME}}), not here"
        )
    if key in ("experiment", "extends"):
        raise ConfigError(
            f"{where}: {path}: a sweep cannot set {key!r} per point; use the spec's "
            f"top-level 'experiment' and 'base' keys"
        )


def scalar_value(where: str, path: str, value: Any) -> Any:
    """``value`` if it is one YAML scalar (no list or mapping), else a :class:`ConfigError`."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise ConfigError(f"{where}: {path} must be a single value, got {value!r}")


def yaml_value(value: Any) -> str:
    """One value as YAML text that reads back the same (``1.0e-05``, ``null``, ``'true'``)."""
    text = yaml.safe_dump(value, default_flow_style=True, width=math.inf).strip()
    return text.removesuffix("\n...").strip()

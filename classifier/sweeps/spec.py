"""Sweep specs: a base config, overrides, points and a grid, expanded into validated configs.

A sweep spec is a YAML file that names a base config, overrides applied to every point, a list
of points and a grid (dotted config keys; every point is combined with every grid value):

    name: variants                   # the parent run's name (default: the file name)
    base: ../default.yaml            # relative to the spec file
    experiment: imdb-sweeps          # optional; else the base config's experiment
    overrides: {train.epochs: 5}     # optional; applied to every point
    points:                          # optional; each point is multiplied by the grid
      - {model.variant: attention}
      - {model.variant: encoder, model.position: learned}
    grid:
      train.seed: [1, 2, 3]

A point may start from a recipe instead of the base: ``recipe: nbow`` reads
``variants/nbow.yaml`` beside the base config (``configs/variants/nbow.yaml``), then the spec's
overrides, the point's own keys and the grid apply over it, so a sweep trains a variant exactly as
its recipe says, naming it instead of copying it:

    points:
      - {recipe: nbow}                                  # configs/variants/nbow.yaml
      - {recipe: encoder, model.position: learned}      # the recipe, one key changed

Instead of points and a grid, a spec may hold a ``search:`` section: ranges for config keys
that Optuna's TPE sampler draws from, trial after trial, aiming at the best validation accuracy:

    search:
      trials: 12                     # how many points to try
      seed: 1                        # the sampler's seed (optional)
      space:
        train.learning_rate: {low: 1.0e-4, high: 1.0e-2, log: true}   # a float range
        model.num_layers: {low: 1, high: 3}                             # integers
        model.d_model: [32, 64]                                        # one of these

:mod:`classifier.sweeps.run` runs the points.

Example:
    >>> spec = load_spec("configs/sweeps/quick.yaml")
    >>> [point.name for point in expand(spec)][:2]
    ['attention seed=1', 'mha seed=1']
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from classifier.config.schema import Config, flatten, load_config
from classifier.config.yaml_files import read_yaml_mapping
from classifier.errors import ConfigError
from classifier.sweeps.compare import group_key, group_labels, params_of
from classifier.sweeps.spec_values import (
    RECIPE,
    check_key,
    describe,
    scalar_value,
    settings_of,
    text_value,
)

SPEC_KEYS = ("name", "base", "experiment", "overrides", "points", "grid", "search")
#: The folder of recipes beside the base config (a point names one with ``recipe: NAME``).
RECIPES = "variants"
SEARCH_KEYS = ("trials", "seed", "space")


@dataclass
class SearchSpec:
    """A spec's ``search:`` section: ``space`` maps a dotted config key to a range (``low``,
    ``high``, ``log``; integers when both ends are) or to a list of choices."""

    trials: int
    space: dict[str, dict[str, Any] | list[Any]]
    seed: int | None = None


@dataclass
class SweepSpec:
    """A validated sweep spec; ``base`` is resolved relative to the spec file."""

    path: Path
    name: str
    base: Path
    experiment: str | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    points: list[dict[str, Any]] = field(default_factory=lambda: [{}])
    grid: dict[str, list[Any]] = field(default_factory=dict)
    search: SearchSpec | None = None


@dataclass
class SweepPoint:
    """One run of a sweep: its own overrides (point and grid values) and the resolved config."""

    index: int  # from 1
    overrides: dict[str, Any]
    config: Config
    label: str = ""  # the group (variant) it belongs to, e.g. "encoder (position=learned)"

    @property
    def config_hash(self) -> str:
        return self.config.config_hash()

    @property
    def config_hashes(self) -> tuple[str, str]:
        """Its config hash, then the one a run of it recorded before the pretraining keys has."""
        return self.config.config_hashes()

    @property
    def name(self) -> str:
        """Run name: the group label and the seed, e.g. ``encoder (position=learned) seed=2``."""
        return f"{self.label} seed={self.config.train.seed}"


# --------------------------------------------------------------------------- spec and points


def load_spec(path: str | Path) -> SweepSpec:
    """Read and check a sweep spec (its points are checked by :func:`expand`).

    Raises:
        ConfigError: on a missing file, bad YAML, an unknown key or a value of the wrong type;
            the message names the key.

    Example:
        >>> load_spec("configs/sweeps/variants.yaml").grid
        {'train.seed': [1, 2, 3]}
    """
    path = Path(path)
    where = f"sweep spec {path}"
    tree = read_yaml_mapping(path, "sweep spec")
    unknown = sorted(str(key) for key in tree if key not in SPEC_KEYS)
    if unknown:
        raise ConfigError(
            f"{where}: unknown key {unknown[0]!r}; a sweep spec takes {', '.join(SPEC_KEYS)}"
        )
    name = text_value(where, "name", tree.get("name", path.stem))
    if "base" not in tree:
        raise ConfigError(f"{where}: 'base' is missing: the config every point starts from")
    base = Path(os.path.normpath(path.parent / text_value(where, "base", tree["base"])))
    if not base.is_file():
        raise ConfigError(f"{where}: base config not found: {base}")
    experiment = tree.get("experiment")
    if experiment is not None:
        experiment = text_value(where, "experiment", experiment)
    overrides = settings_of(where, "overrides", tree.get("overrides") or {})
    points_tree = tree.get("points")
    if points_tree is None:
        points = [{}]
    elif not isinstance(points_tree, list) or not points_tree:
        raise ConfigError(
            f"{where}: points must be a non-empty list of overrides, got {points_tree!r}"
        )
    else:
        points = [
            _point(where, number, point or {}, base) for number, point in enumerate(points_tree, 1)
        ]
    grid_tree = tree.get("grid") or {}
    if not isinstance(grid_tree, dict):
        raise ConfigError(
            f"{where}: grid must map config keys to lists of values, got {grid_tree!r}"
        )
    grid: dict[str, list[Any]] = {}
    for key, values in flatten(grid_tree).items():
        if not isinstance(values, list) or not values:
            raise ConfigError(
                f"{where}: grid.{key} must be a non-empty list of values, got {values!r}"
            )
        grid[key] = [scalar_value(where, f"grid.{key}", value) for value in values]
        check_key(where, f"grid.{key}", key)
    search = None
    if "search" in tree:
        if "points" in tree or "grid" in tree:
            raise ConfigError(f"{where}: a spec has points and a grid, or a search, not both")
        search = _search(where, tree["search"])
    return SweepSpec(path, name, base, experiment, overrides, points, grid, search)


def _point(where: str, number: int, tree: Any, base: Path) -> dict[str, Any]:
    """Check a point: config keys, and maybe the ``recipe`` it starts from."""
    if not isinstance(tree, dict) or RECIPE not in tree:
        return settings_of(where, f"points[{number}]", tree)
    recipe = tree[RECIPE]
    point = settings_of(where, f"points[{number}]", {k: v for k, v in tree.items() if k != RECIPE})
    if not isinstance(recipe, str) or not recipe_path(base, recipe).is_file():
        known = ", ".join(sorted(path.stem for path in (base.parent / RECIPES).glob("*.yaml")))
        raise ConfigError(
            f"{where}: points[{number}].recipe: no recipe {recipe!r} in "
            f"{base.parent / RECIPES}; the recipes are {known}"
        )
    return {RECIPE: recipe, **point}


def recipe_path(base: Path, name: str) -> Path:
    """The file of recipe ``name``: ``variants/NAME.yaml`` beside the base config.

    Example:
        >>> recipe_path(Path("configs/default.yaml"), "nbow").as_posix()
        'configs/variants/nbow.yaml'
    """
    return base.parent / RECIPES / f"{name}.yaml"


def _search(where: str, tree: Any) -> SearchSpec:
    """Check a ``search:`` section (its values are checked against the config by
    :func:`search_point`)."""
    if not isinstance(tree, dict):
        raise ConfigError(f"{where}: search must map trials, seed and space, got {tree!r}")
    unknown = sorted(str(key) for key in tree if key not in SEARCH_KEYS)
    if unknown:
        raise ConfigError(
            f"{where}: search: unknown key {unknown[0]!r}; it takes trials, seed, space"
        )
    trials = tree.get("trials")
    if isinstance(trials, bool) or not isinstance(trials, int) or not 1 <= trials <= 10_000:
        raise ConfigError(
            f"{where}: search.trials must be a whole number from 1 to 10000, got {trials!r}"
        )
    seed = tree.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ConfigError(f"{where}: search.seed must be a whole number, got {seed!r}")
    space_tree = tree.get("space")
    if not isinstance(space_tree, dict) or not space_tree:
        raise ConfigError(
            f"{where}: search.space must map config keys to ranges, got {space_tree!r}"
        )
    space: dict[str, dict[str, Any] | list[Any]] = {}
    for key, value in space_tree.items():
        path = f"search.space.{key}"
        check_key(where, path, key)
        if isinstance(value, list):
            if not value:
                raise ConfigError(f"{where}: {path} must list at least one value")
            space[key] = [scalar_value(where, path, choice) for choice in value]
            continue
        if (
            not isinstance(value, dict)
            or set(value) - {"low", "high", "log"}
            or not {"low", "high"} <= set(value)
        ):
            raise ConfigError(
                f"{where}: {path} must be {{low: L, high: H, log: true|false}} or a list of "
                f"values, got {value!r}"
            )
        low, high, log = value["low"], value["high"], value.get("log", False)
        numbers = all(
            isinstance(end, int | float) and not isinstance(end, bool) and math.isfinite(end)
            for end in (low, high)
        )
        if not numbers or low >= high:
            raise ConfigError(f"{where}: {path}: low and high must be finite numbers, low < high")
        if not isinstance(log, bool) or (log and low <= 0):
            raise ConfigError(
                f"{where}: {path}: log is true or false, and a log range needs low > 0"
            )
        space[key] = {"low": low, "high": high, "log": log}
    return SearchSpec(trials, space, seed)


def search_point(spec: SweepSpec, number: int, values: Mapping[str, Any]) -> SweepPoint:
    """The point of search trial ``number`` (from 1) with the sampled ``values``.

    Example:
        >>> spec = load_spec("configs/sweeps/search.yaml")
        >>> search_point(spec, 1, {"train.learning_rate": 0.003}).label
        'trial 1'
    """
    settings = {**spec.overrides, **values}
    if spec.experiment is not None:
        settings["experiment"] = spec.experiment
    try:
        config = load_config(spec.base, settings=settings)
    except ConfigError as error:
        raise ConfigError(
            f"sweep spec {spec.path}, trial {number} ({describe(values)}): {error}"
        ) from None
    return SweepPoint(number, dict(values), config, label=f"trial {number}")


def expand(spec: SweepSpec) -> list[SweepPoint]:
    """Resolve every point times every grid combination into a validated config.

    Overrides apply in this order: the base config (or the point's recipe), the spec's
    ``overrides``, the point, the grid values, the spec's ``experiment``.

    Raises:
        ConfigError: a point has a bad key or value (the message names the point and the key),
            or two points resolve to the same config.

    Example:
        >>> [p.overrides for p in expand(load_spec("configs/sweeps/quick.yaml"))][0]
        {'recipe': 'attention', 'train.seed': 1}
    """
    where = f"sweep spec {spec.path}"
    if spec.search is not None:
        return []  # a search draws its points as it goes (search_point)
    combinations = list(itertools.product(*spec.grid.values()))
    points: list[SweepPoint] = []
    seen: dict[str, int] = {}
    for point in spec.points:
        for combination in combinations:
            own = {**point, **dict(zip(spec.grid, combination, strict=True))}
            settings = {**spec.overrides, **own}
            recipe = settings.pop(RECIPE, None)
            if spec.experiment is not None:
                settings["experiment"] = spec.experiment
            index = len(points) + 1
            base = spec.base if recipe is None else recipe_path(spec.base, recipe)
            try:
                config = load_config(base, settings=settings)
            except ConfigError as error:
                raise ConfigError(f"{where}, point {index} ({describe(own)}): {error}") from None
            digest = config.config_hash()
            if digest in seen:
                raise ConfigError(
                    f"{where}: points {seen[digest]} and {index} are the same run "
                    f"({describe(own)}); give every point a different config"
                )
            seen[digest] = index
            points.append(SweepPoint(index, own, config))
    labels = group_labels([group_key(params_of(point.config)) for point in points])
    for point in points:
        point.label = labels[group_key(params_of(point.config))]
    return points


def spec_hash(points: Sequence[SweepPoint]) -> str:
    """A short hash of the resolved point list: it finds a sweep's parent run again.

    Example:
        >>> len(spec_hash(expand(load_spec("configs/sweeps/quick.yaml"))))
        12
    """
    return _points_hash([point.config_hash for point in points])


def spec_hashes(points: Sequence[SweepPoint]) -> tuple[str, str]:
    """:func:`spec_hash`, then the hash a sweep of the same points carries where it was started
    before the pretraining keys came (:meth:`SweepPoint.config_hashes`): a sweep looks for both.

    Example:
        >>> points = expand(load_spec("configs/sweeps/quick.yaml"))
        >>> spec_hashes(points)[0] == spec_hash(points)
        True
    """
    return spec_hash(points), _points_hash([point.config_hashes[1] for point in points])


def _points_hash(config_hashes: list[str]) -> str:
    return hashlib.sha256(json.dumps(config_hashes).encode()).hexdigest()[:12]


def search_hash(spec: SweepSpec) -> str:
    """A short hash of a search: its base config with the overrides, and its section.

    Example:
        >>> len(search_hash(load_spec("configs/sweeps/search.yaml")))
        12
    """
    base = search_point(spec, 0, {}).config_hash
    search = spec.search
    text = json.dumps([base, search.trials, search.seed, search.space], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]

"""Many training runs from one sweep spec, grouped under one MLflow parent run, and the
comparison table of their results.

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

Each resolved point is a full ``classify train`` run, logged as a nested child of the sweep's
parent run. Running the same spec again finds that parent (tag ``sweep_spec_hash``), skips the
points that already have a FINISHED child with the same config hash, resumes KILLED or FAILED
children from their checkpoints and trains the rest. At the end the parent gets the comparison
table (CSV and Markdown), a bar chart of test accuracy per variant and a chart of validation
accuracy per epoch, the metrics ``best_val_accuracy`` and ``best_test_accuracy`` and the tag
``best_point``: the group with the highest mean validation accuracy (the test split never
chooses).

Example:
    >>> spec = load_spec("configs/sweeps/quick.yaml")
    >>> [point.name for point in expand(spec)][:2]
    ['attention seed=1', 'mha seed=1']
    >>> result = run_sweep(spec)
    >>> print(format_comparison(result.rows, "markdown"))
"""

from __future__ import annotations

import csv
import hashlib
import io
import itertools
import json
import math
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mlflow
import numpy as np
import yaml
from mlflow.entities import Run
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from classifier.config import Config, flatten, load_config
from classifier.errors import ConfigError, SweepError
from classifier.tracking import configure_tracking, ensure_experiment, git_commit

SPEC_KEYS = ("name", "base", "experiment", "overrides", "points", "grid")
#: Keys that do not make a different variant: runs that differ only here are averaged.
NOT_GROUPED = ("train.seed", "data.data_dir")
#: Every config key with its default as MLflow logs it; a run that predates a key had the default.
DEFAULT_PARAMS = {key: str(value) for key, value in Config().flat().items()}
CONFIG_KEYS = tuple(DEFAULT_PARAMS)
FORMATS = ("table", "markdown", "csv", "json")

# MLflow tags of sweep runs.
SPEC_HASH_TAG = "sweep_spec_hash"  # parent: hash of the resolved point list
PARENT_TAG = "sweep_parent"  # child: the parent's run id
POINT_TAG = "sweep_point"  # child: the point's number, from 1
LABEL_TAG = "sweep_label"  # child: the point's group label, e.g. "encoder (position=learned)"
CONFIG_HASH_TAG = "config_hash"  # child: Config.config_hash() of its resolved config

#: Model sizes worth a glance per variant, as (config key, short name).
_SIZES = (
    ("model.embed_dim", "d"),
    ("model.num_heads", "h"),
    ("model.ff_dim", "ff"),
    ("model.num_layers", "L"),
)
_SIZES_USED = {"attention": 1, "mha": 2, "block": 3, "block_pos": 3, "encoder": 4}
_FIXED_POSITION = {"attention": "none", "mha": "none", "block": "none", "block_pos": "learned"}


class SweepInterrupted(Exception):
    """A sweep was stopped with Ctrl-C: the running child and the parent are KILLED."""

    def __init__(self, run_id: str, spec_path: str | Path):
        super().__init__(
            f"interrupted: sweep run {run_id} marked KILLED, finished points are kept; "
            f"continue with: classify sweep {spec_path}"
        )
        self.run_id = run_id


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
    def name(self) -> str:
        """Run name: the group label and the seed, e.g. ``encoder (position=learned) seed=2``."""
        return f"{self.label} seed={self.config.train.seed}"


@dataclass
class ComparisonRow:
    """One group of runs that differ only in the seed (and data directory)."""

    variant: str
    seeds: list[int]
    key_params: str
    best_val_accuracy: float  # mean over seeds
    test_accuracy_mean: float
    test_accuracy_std: float  # population std (ddof=0): 0 for one seed
    epochs: float  # mean number of epochs run
    train_time_s: float  # mean
    parameters: int | None
    run_ids: list[str] = field(default_factory=list)
    test_accuracies: list[float] = field(default_factory=list)
    val_accuracy_curves: list[list[float]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The row as the JSON format prints it (separate mean and std)."""
        return {
            "variant": self.variant,
            "seeds": self.seeds,
            "key_params": self.key_params,
            "best_val_accuracy": self.best_val_accuracy,
            "test_accuracy_mean": self.test_accuracy_mean,
            "test_accuracy_std": self.test_accuracy_std,
            "epochs": self.epochs,
            "train_time_s": self.train_time_s,
            "parameters": self.parameters,
            "run_ids": self.run_ids,
        }


@dataclass
class SweepResult:
    """What :func:`run_sweep` did: the parent run, the comparison and which points ran."""

    run_id: str
    rows: list[ComparisonRow]
    trained: list[int] = field(default_factory=list)
    resumed: list[int] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)
    best: ComparisonRow | None = None


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
    if not path.is_file():
        raise ConfigError(f"{where} not found")
    try:
        tree = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        reason = str(error).replace("\n", " ")
        raise ConfigError(f"{where} is not valid YAML: {reason}") from None
    if not isinstance(tree, dict):
        raise ConfigError(f"{where} must be a mapping with the keys {', '.join(SPEC_KEYS)}")
    unknown = sorted(str(key) for key in tree if key not in SPEC_KEYS)
    if unknown:
        raise ConfigError(
            f"{where}: unknown key {unknown[0]!r}; a sweep spec takes {', '.join(SPEC_KEYS)}"
        )
    name = _text(where, "name", tree.get("name", path.stem))
    if "base" not in tree:
        raise ConfigError(f"{where}: 'base' is missing: the config every point starts from")
    base = Path(os.path.normpath(path.parent / _text(where, "base", tree["base"])))
    if not base.is_file():
        raise ConfigError(f"{where}: base config not found: {base}")
    experiment = tree.get("experiment")
    if experiment is not None:
        experiment = _text(where, "experiment", experiment)
    overrides = _settings(where, "overrides", tree.get("overrides") or {})
    points_tree = tree.get("points")
    if points_tree is None:
        points = [{}]
    elif not isinstance(points_tree, list) or not points_tree:
        raise ConfigError(
            f"{where}: points must be a non-empty list of overrides, got {points_tree!r}"
        )
    else:
        points = [
            _settings(where, f"points[{number}]", point or {})
            for number, point in enumerate(points_tree, 1)
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
        grid[key] = [_scalar(where, f"grid.{key}", value) for value in values]
        _check_key(where, f"grid.{key}", key)
    return SweepSpec(path, name, base, experiment, overrides, points, grid)


def expand(spec: SweepSpec) -> list[SweepPoint]:
    """Resolve every point times every grid combination into a validated config.

    Overrides apply in this order: the base config, the spec's ``overrides``, the point, the
    grid values, the spec's ``experiment``.

    Raises:
        ConfigError: a point has a bad key or value (the message names the point and the key),
            or two points resolve to the same config.

    Example:
        >>> [p.overrides for p in expand(load_spec("configs/sweeps/quick.yaml"))][0]
        {'model.variant': 'attention', 'train.seed': 1}
    """
    where = f"sweep spec {spec.path}"
    combinations = list(itertools.product(*spec.grid.values()))
    points: list[SweepPoint] = []
    seen: dict[str, int] = {}
    for point in spec.points:
        for combination in combinations:
            own = {**point, **dict(zip(spec.grid, combination, strict=True))}
            settings = {**spec.overrides, **own}
            if spec.experiment is not None:
                settings["experiment"] = spec.experiment
            index = len(points) + 1
            try:
                config = load_config(
                    spec.base, [f"{k}={_yaml_value(v)}" for k, v in settings.items()]
                )
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
    labels = group_labels([group_key(_params(point.config)) for point in points])
    for point in points:
        point.label = labels[group_key(_params(point.config))]
    return points


def spec_hash(points: Sequence[SweepPoint]) -> str:
    """A short hash of the resolved point list: it finds a sweep's parent run again.

    Example:
        >>> len(spec_hash(expand(load_spec("configs/sweeps/quick.yaml"))))
        12
    """
    text = json.dumps([point.config_hash for point in points])
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def describe(overrides: Mapping[str, Any]) -> str:
    """Overrides as ``key=value`` words (YAML spelling of the values).

    Example:
        >>> describe({"model.variant": "encoder", "train.seed": 1})
        'model.variant=encoder train.seed=1'
    """
    return " ".join(f"{key}={_yaml_value(value)}" for key, value in overrides.items()) or "-"


def describe_points(spec: SweepSpec, points: Sequence[SweepPoint]) -> str:
    """What ``classify sweep --dry-run`` prints: one numbered line per point with its hash.

    Example:
        >>> print(describe_points(spec, expand(spec)))
        sweep quick: 6 points in experiment imdb-sweeps-quick (base configs/default.yaml)
        ...
    """
    experiment = points[0].config.experiment if points else spec.experiment
    lines = [
        f"sweep {spec.name}: {len(points)} point{'s' if len(points) != 1 else ''} in experiment "
        f"{experiment} (base {spec.base}, spec hash {spec_hash(points)})"
    ]
    if spec.overrides:
        lines.append(f"every point: {describe(spec.overrides)}")
    rows = [
        (str(p.index), p.name, describe(p.overrides), f"config {p.config_hash}") for p in points
    ]
    widths = [max((len(row[i]) for row in rows), default=0) for i in range(3)]
    for row in rows:
        lines.append(
            f"{row[0]:>{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]:<{widths[2]}}  {row[3]}"
        )
    return "\n".join(lines)


# --------------------------------------------------------------------------- running


def run_sweep(spec: SweepSpec, echo: Callable[[str], None] = print) -> SweepResult:
    """Run (or continue) a sweep: one MLflow parent run, one nested child per point.

    Points with a FINISHED child of the same config hash are skipped; KILLED or FAILED children
    are resumed from their checkpoints; the others are trained. The parent then gets the
    comparison artefacts and the best point's summary.

    Raises:
        SweepInterrupted: on Ctrl-C (the child and the parent are marked KILLED).

    Example:
        >>> result = run_sweep(load_spec("configs/sweeps/quick.yaml"))
        >>> len(result.trained) + len(result.resumed) + len(result.skipped)
        6
    """
    import keras

    from classifier.train import ResumeError, TrainingInterrupted, quiet_libraries, train

    points = expand(spec)
    configure_tracking()
    quiet_libraries()
    experiment = points[0].config.experiment
    experiment_id = ensure_experiment(experiment)
    client = MlflowClient()
    digest = spec_hash(points)
    previous = find_parent(experiment_id, digest)
    tags = {SPEC_HASH_TAG: digest, "sweep_name": spec.name, "git_commit": git_commit()}
    result = SweepResult(run_id="", rows=[])
    with mlflow.start_run(run_id=previous, run_name=spec.name, tags=tags) as parent:
        result.run_id = run_id = parent.info.run_id
        if previous is None:
            mlflow.log_params(
                {
                    "sweep.spec": str(spec.path),
                    "sweep.base": str(spec.base),
                    "sweep.points": len(points),
                    "sweep.grid": json.dumps(spec.grid),
                }
            )
            mlflow.log_text(spec.path.read_text(), "sweep.yaml")
        echo(
            f"sweep {spec.name}: {len(points)} points, parent run {run_id} in experiment "
            f"{experiment}" + (" (continuing)" if previous else "")
        )
        children = _children_by_hash(experiment_id, run_id)
        try:
            for point in points:
                title = f"[{point.index}/{len(points)}] {point.name}"
                runs = children.get(point.config_hash, [])
                finished = [run for run in runs if run.info.status == "FINISHED"]
                if finished:
                    echo(f"skip {title}: finished in run {finished[0].info.run_id}")
                    result.skipped.append(point.index)
                    continue
                keras.backend.clear_session()
                unfinished = [run for run in runs if run.info.status != "FINISHED"]
                if unfinished:
                    child = unfinished[0].info
                    echo(f"resume {title}: run {child.run_id} ({child.status})")
                    try:
                        train(resume=child.run_id, echo=echo)
                        client.update_run(child.run_id, name=point.name)
                        result.resumed.append(point.index)
                        continue
                    except ResumeError as error:
                        echo(f"cannot resume ({error}); training the point afresh")
                echo(f"train {title} (config {point.config_hash})")
                child_tags = {
                    PARENT_TAG: run_id,
                    POINT_TAG: str(point.index),
                    LABEL_TAG: point.label,
                    CONFIG_HASH_TAG: point.config_hash,
                }
                trained = train(point.config, echo=echo, tags=child_tags)
                client.update_run(trained.run_id, name=point.name)
                result.trained.append(point.index)
            result.rows = compare_runs(sweep_runs(run_id, client), client, by_point=True)
            result.best = _log_summary(result.rows, client)
        except (TrainingInterrupted, KeyboardInterrupt):
            mlflow.end_run(status="KILLED")
            raise SweepInterrupted(run_id, spec.path) from None
    if result.rows:
        echo(format_comparison(result.rows, "table"))
    if result.best:
        best = result.best
        echo(
            f"best: {best.variant} (mean val_accuracy {best.best_val_accuracy:.4f}, "
            f"test_accuracy {best.test_accuracy_mean:.4f} ± {best.test_accuracy_std:.4f}) - "
            f"sweep run {run_id}; trained {len(result.trained)}, resumed {len(result.resumed)}, "
            f"skipped {len(result.skipped)}"
        )
    return result


def find_parent(experiment_id: str, digest: str) -> str | None:
    """The newest sweep parent run with this spec hash in the experiment, or None."""
    runs = mlflow.search_runs(
        experiment_ids=[experiment_id],
        filter_string=f"tags.{SPEC_HASH_TAG} = '{digest}'",
        order_by=["attributes.start_time DESC"],
        max_results=1,
        output_format="list",
    )
    return runs[0].info.run_id if runs else None


def sweep_runs(parent_run_id: str, client: MlflowClient | None = None) -> list[Run]:
    """The FINISHED child runs of a sweep's parent run."""
    client = client or MlflowClient()
    parent = client.get_run(parent_run_id)
    return mlflow.search_runs(
        experiment_ids=[parent.info.experiment_id],
        filter_string=f"tags.{PARENT_TAG} = '{parent_run_id}' and attributes.status = 'FINISHED'",
        output_format="list",
    )


def _children_by_hash(experiment_id: str, parent_run_id: str) -> dict[str, list[Run]]:
    runs = mlflow.search_runs(
        experiment_ids=[experiment_id],
        filter_string=f"tags.{PARENT_TAG} = '{parent_run_id}'",
        order_by=["attributes.start_time DESC"],
        output_format="list",
    )
    children: dict[str, list[Run]] = {}
    for run in runs:
        digest = run.data.tags.get(CONFIG_HASH_TAG)
        if digest:
            children.setdefault(digest, []).append(run)
    return children


def _log_summary(rows: list[ComparisonRow], client: MlflowClient) -> ComparisonRow | None:
    """Log the comparison artefacts and the best group's metrics on the active (parent) run."""
    if not rows:
        return None
    from classifier import plots

    with tempfile.TemporaryDirectory(prefix="classify-sweep-") as folder:
        folder = Path(folder)
        (folder / "comparison.csv").write_text(format_comparison(rows, "csv") + "\n")
        (folder / "comparison.md").write_text(format_comparison(rows, "markdown") + "\n")
        labels = [row.variant for row in rows]
        plots.plot_test_accuracy_by_variant(
            folder / "test_accuracy_by_variant.png",
            labels,
            [row.test_accuracy_mean for row in rows],
            [row.test_accuracy_std for row in rows],
            values=[row.test_accuracies for row in rows],
        )
        plots.plot_validation_accuracy_by_variant(
            folder / "val_accuracy_by_variant.png",
            {row.variant: row.val_accuracy_curves for row in rows},
        )
        mlflow.log_artifacts(str(folder))
    best = max(rows, key=lambda row: row.best_val_accuracy)
    mlflow.log_metrics(
        {
            "best_val_accuracy": best.best_val_accuracy,
            "best_test_accuracy": best.test_accuracy_mean,
            "points_finished": sum(len(row.run_ids) for row in rows),
        }
    )
    best_run = max(
        best.run_ids, key=lambda run_id: client.get_run(run_id).data.metrics["best_val_accuracy"]
    )
    mlflow.set_tags({"best_point": best.variant, "best_run_id": best_run})
    return best


# --------------------------------------------------------------------------- comparison


def compare(experiment: str | None = None, sweep_id: str | None = None) -> list[ComparisonRow]:
    """The comparison rows of a sweep (its finished children) or of an experiment (its
    finished runs, sweep parents excluded), read from the MLflow store.

    Raises:
        SweepError: no such run or experiment, or no finished runs in it.

    Example:
        >>> rows = compare(experiment="imdb-sweeps")
        >>> print(format_comparison(rows, "table"))
    """
    uri = configure_tracking()
    client = MlflowClient()
    if sweep_id:
        try:
            parent = client.get_run(sweep_id)
        except MlflowException:
            raise SweepError(f"no run {sweep_id!r} in {uri}") from None
        if SPEC_HASH_TAG not in parent.data.tags:
            raise SweepError(f"run {sweep_id} is not a sweep's parent run")
        rows = compare_runs(sweep_runs(sweep_id, client), client, by_point=True)
        if not rows:
            raise SweepError(f"sweep run {sweep_id} has no finished child runs yet")
        return rows
    name = experiment or Config().experiment
    found = client.get_experiment_by_name(name)
    if found is None:
        raise SweepError(f"no experiment {name!r} in {uri}")
    runs = mlflow.search_runs(
        experiment_ids=[found.experiment_id],
        filter_string="attributes.status = 'FINISHED'",
        output_format="list",
    )
    runs = [run for run in runs if SPEC_HASH_TAG not in run.data.tags]
    rows = compare_runs(runs, client)
    if not rows:
        raise SweepError(f"no finished runs in experiment {name!r}")
    return rows


def compare_runs(
    runs: Iterable[Run], client: MlflowClient | None = None, by_point: bool = False
) -> list[ComparisonRow]:
    """Group finished training runs by config (all keys but the seed and the data directory)
    and average each group over its seeds.

    Args:
        runs: MLflow runs; those without ``model.variant`` or ``test_accuracy`` are ignored.
        client: reads the per-epoch ``val_accuracy`` histories.
        by_point: order groups by the sweep's point numbers (else by start time).

    Example:
        >>> rows = compare_runs(sweep_runs(parent_run_id))
        >>> rows[0].variant, rows[0].seeds
        ('attention', [1, 2, 3])
    """
    client = client or MlflowClient()
    usable = [
        run
        for run in runs
        if "model.variant" in run.data.params and "test_accuracy" in run.data.metrics
    ]

    def order(run: Run) -> tuple[float, float]:
        point = run.data.tags.get(POINT_TAG, "")
        return (int(point) if by_point and point.isdigit() else 0, run.info.start_time or 0)

    groups: dict[tuple, list[Run]] = {}
    for run in sorted(usable, key=order):
        groups.setdefault(group_key(run.data.params), []).append(run)
    labels = group_labels(list(groups))
    rows = []
    for key, members in groups.items():
        members.sort(key=lambda run: _seed(run.data.params))
        histories = [_val_history(client, run.info.run_id) for run in members]
        test = [run.data.metrics["test_accuracy"] for run in members]
        epochs = [
            len(history) or run.data.metrics.get("best_epoch", 0)
            for run, history in zip(members, histories, strict=True)
        ]
        parameters = members[0].data.params.get("model.parameters")
        rows.append(
            ComparisonRow(
                variant=labels[key],
                seeds=[_seed(run.data.params) for run in members],
                key_params=key_params(members[0].data.params),
                best_val_accuracy=_mean(
                    run.data.metrics.get("best_val_accuracy") for run in members
                ),
                test_accuracy_mean=float(np.mean(test)),
                test_accuracy_std=float(np.std(test)),
                epochs=float(np.mean(epochs)),
                train_time_s=_mean(run.data.metrics.get("train_time_s") for run in members),
                parameters=int(parameters) if parameters and parameters.isdigit() else None,
                run_ids=[run.info.run_id for run in members],
                test_accuracies=test,
                val_accuracy_curves=histories,
            )
        )
    return rows


def group_key(params: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """What makes runs one group: every config param except the seed and the data directory
    (a key the run did not log counts with its default value).

    Example:
        >>> dict(group_key({"model.variant": "mha", "train.seed": "1"}))["model.variant"]
        'mha'
    """
    return tuple(
        (key, str(params.get(key, DEFAULT_PARAMS[key])))
        for key in CONFIG_KEYS
        if key not in NOT_GROUPED
    )


def group_labels(keys: Sequence[tuple[tuple[str, str], ...]]) -> dict[tuple, str]:
    """A label per group: the variant, plus the keys that tell groups of one variant apart.

    Example:
        >>> a = group_key({"model.variant": "encoder", "model.position": "sinusoidal"})
        >>> b = group_key({"model.variant": "encoder", "model.position": "learned"})
        >>> group_labels([a, b])[b]
        'encoder (position=learned)'
    """
    by_variant: dict[str, list[tuple]] = {}
    for key in dict.fromkeys(keys):
        by_variant.setdefault(dict(key).get("model.variant", "?"), []).append(key)
    labels = {}
    for variant, members in by_variant.items():
        values = [dict(member) for member in members]
        varying = [k for k in CONFIG_KEYS if len({v.get(k) for v in values}) > 1]
        short = {k: k.rsplit(".", 1)[-1] for k in varying}
        if len(set(short.values())) < len(short):
            short = {k: k for k in varying}
        for member, value in zip(members, values, strict=True):
            extra = ", ".join(f"{short[k]}={value.get(k)}" for k in varying)
            labels[member] = f"{variant} ({extra})" if extra else variant
    return labels


def key_params(params: Mapping[str, Any]) -> str:
    """The sizes that matter for the run's variant, e.g. ``d=16 h=2 ff=64 L=2 pos=sinusoidal``.

    Example:
        >>> key_params({"model.variant": "mha", "model.embed_dim": "16", "model.num_heads": "2"})
        'd=16 h=2 pos=none'
    """
    variant = str(params.get("model.variant"))
    used = _SIZES[: _SIZES_USED.get(variant, len(_SIZES))]
    parts = [f"{short}={params[key]}" for key, short in used if key in params]
    position = _FIXED_POSITION.get(variant, params.get("model.position"))
    if position is not None:
        parts.append(f"pos={position}")
    if (
        variant in ("block", "block_pos", "encoder")
        and str(params.get("model.norm_first")) == "True"
    ):
        parts.append("pre-LN")
    return " ".join(parts)


COLUMNS = (
    "variant",
    "seeds",
    "key params",
    "best val acc",
    "test acc",
    "epochs",
    "train time (s)",
    "params",
)
CSV_COLUMNS = (
    "variant",
    "seeds",
    "key_params",
    "best_val_accuracy",
    "test_accuracy_mean",
    "test_accuracy_std",
    "epochs",
    "train_time_s",
    "parameters",
)
_TEXT_COLUMNS = 3  # left-aligned; the numbers are right-aligned


def format_comparison(rows: Sequence[ComparisonRow], fmt: str = "table") -> str:
    """The comparison table as ``table`` (aligned text), ``markdown``, ``csv`` or ``json``.

    Example:
        >>> print(format_comparison(compare(sweep_id=run_id), "markdown"))
        | variant | seeds | key params | best val acc | test acc | epochs | train time (s) | params |
        ...
    """
    if fmt == "json":
        return json.dumps([row.to_json() for row in rows], indent=2)
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(CSV_COLUMNS)
        for row in rows:
            writer.writerow(
                [
                    row.variant,
                    _seeds(row.seeds),
                    row.key_params,
                    _round(row.best_val_accuracy),
                    _round(row.test_accuracy_mean),
                    _round(row.test_accuracy_std),
                    _round(row.epochs),
                    _round(row.train_time_s),
                    "" if row.parameters is None else row.parameters,
                ]
            )
        return buffer.getvalue().rstrip("\n")
    cells = [_cells(row) for row in rows]
    if fmt == "markdown":
        align = ["---"] * _TEXT_COLUMNS + ["---:"] * (len(COLUMNS) - _TEXT_COLUMNS)
        lines = [_markdown_row(COLUMNS), _markdown_row(align)]
        lines += [_markdown_row(row) for row in cells]
        return "\n".join(lines)
    if fmt == "table":
        widths = [max(len(str(r[i])) for r in [COLUMNS, *cells]) for i in range(len(COLUMNS))]
        lines = []
        for row in [COLUMNS, *cells]:
            parts = [
                f"{cell:<{width}}" if i < _TEXT_COLUMNS else f"{cell:>{width}}"
                for i, (cell, width) in enumerate(zip(row, widths, strict=True))
            ]
            lines.append("  ".join(parts).rstrip())
        return "\n".join(lines)
    raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")


def _cells(row: ComparisonRow) -> tuple[str, ...]:
    return (
        row.variant,
        _seeds(row.seeds),
        row.key_params,
        f"{row.best_val_accuracy:.4f}",
        f"{row.test_accuracy_mean:.4f} ± {row.test_accuracy_std:.4f}",
        f"{row.epochs:.1f}",
        f"{row.train_time_s:.1f}",
        "" if row.parameters is None else f"{row.parameters:,}",
    )


def _markdown_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(str(cell).replace("|", "\\|") for cell in cells) + " |"


# --------------------------------------------------------------------------- helpers


def _text(where: str, key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: {key} must be a non-empty string, got {value!r}")
    return value


def _settings(where: str, key: str, tree: Any) -> dict[str, Any]:
    """Check a mapping of dotted config keys to values (nested mappings are flattened)."""
    if not isinstance(tree, dict):
        raise ConfigError(f"{where}: {key} must map config keys to values, got {tree!r}")
    settings = {}
    for name, value in flatten(tree).items():
        _check_key(where, f"{key}.{name}", name)
        settings[str(name)] = _scalar(where, f"{key}.{name}", value)
    return settings


def _check_key(where: str, path: str, key: Any) -> None:
    if not isinstance(key, str):
        raise ConfigError(f"{where}: {path}: config keys are dotted strings, got {key!r}")
    if key in ("experiment", "extends"):
        raise ConfigError(
            f"{where}: {path}: a sweep cannot set {key!r} per point; use the spec's "
            f"top-level 'experiment' and 'base' keys"
        )


def _scalar(where: str, path: str, value: Any) -> Any:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise ConfigError(f"{where}: {path} must be a single value, got {value!r}")


def _yaml_value(value: Any) -> str:
    """One value as YAML text that reads back the same (``1.0e-05``, ``null``, ``'true'``)."""
    text = yaml.safe_dump(value, default_flow_style=True, width=math.inf).strip()
    return text.removesuffix("\n...").strip()


def _params(config: Config) -> dict[str, str]:
    return {key: str(value) for key, value in config.flat().items()}


def _seed(params: Mapping[str, Any]) -> int:
    try:
        return int(params.get("train.seed", 0))
    except ValueError:
        return 0


def _seeds(seeds: Sequence[int]) -> str:
    return ",".join(str(seed) for seed in seeds)


def _mean(values: Iterable[float | None]) -> float:
    present = [value for value in values if value is not None]
    return float(np.mean(present)) if present else float("nan")


def _round(value: float) -> float:
    return round(value, 6)


def _val_history(client: MlflowClient, run_id: str) -> list[float]:
    history = client.get_metric_history(run_id, "val_accuracy")
    by_step = {metric.step: metric.value for metric in history}
    return [by_step[step] for step in sorted(by_step)]

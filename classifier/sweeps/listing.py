"""What ``classify sweep --dry-run`` prints: a grid's numbered points, or a search's ranges."""

from __future__ import annotations

from collections.abc import Sequence

from classifier.sweeps.spec import (
    SweepPoint,
    SweepSpec,
    search_hash,
    search_point,
    spec_hash,
)
from classifier.sweeps.spec_values import describe, yaml_value


def describe_points(spec: SweepSpec, points: Sequence[SweepPoint]) -> str:
    """What ``classify sweep --dry-run`` prints: one numbered line per point with its hash.

    Example:
        >>> from classifier.sweeps.spec import expand, load_spec
        >>> spec = load_spec("configs/sweeps/quick.yaml")
        >>> print(describe_points(spec, expand(spec)))
        sweep quick: 6 points in experiment imdb-sweeps-quick (base configs/default.yaml, spec hash ...)
        every point: data.train_size=4000 ...
        1  attention seed=1  recipe=attention train.seed=1  config ...
        ...
    """
    if spec.search is not None:
        search = spec.search
        base = search_point(spec, 0, {}).config
        lines = [
            f"sweep {spec.name}: a search of {search.trials} trials in experiment "
            f"{base.experiment} (base {spec.base}, spec hash {search_hash(spec)}, TPE sampler, "
            f"seed {search.seed}), aiming at the best validation accuracy"
        ]
        if spec.overrides:
            lines.append(f"every trial: {describe(spec.overrides)}")
        for key, bounds in search.space.items():
            if isinstance(bounds, list):
                drawn = "one of " + ", ".join(yaml_value(choice) for choice in bounds)
            else:
                drawn = f"{yaml_value(bounds['low'])} to {yaml_value(bounds['high'])}" + (
                    " (log scale)" if bounds["log"] else ""
                )
            lines.append(f"{key}: {drawn}")
        return "\n".join(lines)
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

"""``classify sweep`` and ``classify compare``: running a sweep (one machine or many) and
comparing finished runs. Registered on the ``classify`` group by :mod:`classifier.cli.main`.
"""

from __future__ import annotations

import sys

import click

from classifier.cli import terminal
from classifier.cli.options import NOT_A_RUN_ID, RUN_ID, FiniteRange, checked
from classifier.cli.startup import import_tensorflow, reach_store
from classifier.config.schema import Config
from classifier.errors import UserError


@click.command()
@click.argument("spec_path", metavar="SPEC", type=click.Path(dir_okay=False))
@click.option(
    "--dry-run",
    is_flag=True,
    help="List the numbered points (label, overrides, config hash) and exit; nothing is logged.",
)
@click.option(
    "--storage",
    metavar="URL",
    callback=checked,
    help="The Optuna storage the workers share: postgresql://USER@HOST:PORT/DATABASE (make "
    "server prints one) or sqlite:///PATH [default: sweeps.db beside mlflow.db].",
)
@click.option(
    "--status",
    "show_status",
    is_flag=True,
    help="Print the points waiting, running (on which worker), finished and failed, and exit.",
)
@click.option(
    "--retries",
    metavar="COUNT",
    type=click.IntRange(0, 100),
    default=2,
    show_default=True,
    help="How often a point that fails by itself (a diverging run) is tried again.",
)
@click.option(
    "--grace",
    type=FiniteRange(3.0, 3600.0),
    default=75.0,
    show_default=True,
    metavar="SECONDS",
    help="Seconds without a heartbeat after which a worker's point goes to another worker.",
)
@click.option(
    "--threads",
    type=click.IntRange(1, 1024),
    metavar="N",
    help="TensorFlow threads of this worker [default: one per core]; with several workers on "
    "one machine, cores divided by workers.",
)
def sweep(
    spec_path: str,
    dry_run: bool,
    storage: str | None,
    show_status: bool,
    retries: int,
    grace: float,
    threads: int | None,
) -> None:
    """Train every point of a sweep spec as nested MLflow runs under one parent run.

    SPEC is a YAML file naming a base config, overrides, and points and a grid, or a search
    (see configs/sweeps/). The command launches the sweep if it is not launched yet, then works
    on it until no point is left; the same command on several machines (with one --storage and
    MLFLOW_TRACKING_URI on one MLflow server) makes them workers of one sweep. A worker that
    dies hands its point to another one; Ctrl-C hands it back (exit code 130); running the
    command again continues. The parent run gets the comparison table (CSV, Markdown), a
    test-accuracy bar chart and a validation-accuracy chart.

    \b
    Examples:
      classify sweep configs/sweeps/variants.yaml --dry-run
      classify sweep configs/sweeps/quick.yaml
      classify sweep configs/sweeps/quick.yaml --status
      classify sweep configs/sweeps/search.yaml --storage postgresql://optuna@127.0.0.1:5433/optuna
      classify sweep configs/sweeps/quick.yaml --threads 1  # one of 2 workers on 2 cores
    """
    from classifier.config.uris import sweep_storage_url
    from classifier.sweeps import spec as sweep_spec
    from classifier.sweeps.listing import describe_points

    spec = sweep_spec.load_spec(spec_path)
    points = sweep_spec.expand(spec)
    if dry_run:
        terminal.out(describe_points(spec, points))
        return
    if storage is not None:
        sweep_storage_url(storage)  # a malformed URL is one line before anything is imported
    reach_store()
    if show_status:
        from classifier.sweeps.status import sweep_status

        terminal.out(sweep_status(spec, storage))
        return
    import_tensorflow(threads)
    from classifier.runs.interrupts import stop_on_signals
    from classifier.sweeps import run as sweeps

    stop_on_signals()
    try:
        sweeps.run_sweep(
            spec, echo=terminal.Progress(), storage=storage, grace=grace, max_retries=retries
        )
    except sweeps.SweepInterrupted as interrupted:
        click.echo(str(interrupted), err=True)
        sys.exit(130)


@click.command()
@click.option(
    "--experiment",
    metavar="NAME",
    callback=checked,
    help="Compare the finished runs of this experiment, sweep parents excluded "
    "(default: imdb-classifier).",
)
@click.option("--sweep", "sweep_id", metavar="RUN_ID", help="Compare the children of this sweep.")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["table", "markdown", "csv", "json"]),
    default="table",
    show_default=True,
    help="Output format.",
)
def compare(experiment: str | None, sweep_id: str | None, output_format: str) -> None:
    """Print the comparison table of finished runs from MLflow: one row per variant.

    Runs that differ only in the seed form one row: variant, seeds, key params, best validation
    accuracy (mean), test accuracy (mean ± std), epochs, training time and parameter count.

    \b
    Examples:
      classify compare --sweep 3f2a9c0d1e6b4a7f8c5d2e1f0a9b8c7d
      classify compare --experiment imdb-sweeps --format markdown
    """
    if experiment and sweep_id:
        raise UserError("give --experiment or --sweep, not both")
    if sweep_id is not None and not RUN_ID.fullmatch(sweep_id):
        raise click.BadParameter(NOT_A_RUN_ID.format(sweep_id), param_hint="'--sweep'")
    name = experiment or Config().experiment
    reach_store(absent=f"no run {sweep_id!r}" if sweep_id else f"no experiment {name!r}")
    from classifier.sweeps import compare as comparison
    from classifier.sweeps.table import format_comparison

    rows = comparison.compare(experiment=experiment, sweep_id=sweep_id)
    terminal.out(format_comparison(rows, output_format))

"""What one training run costs besides its epochs, part by part, on a run of the test suite's size.

A run of ``classify train`` on 120 training, 40 validation and 80 test reviews (the test
fixture's synthetic reviews, written as a TFDS folder here) trains 4 short epochs, yet takes
seconds more: loading and vectorizing, building the model, starting the MLflow run, tracing the
training graph, and at the end calibrating, evaluating, drawing, saving, exporting the LiteRT
bundle (with its checks) and registering. Those parts are what every test that trains pays, and
every small data set. This benchmark times each of them: each part is a function of the project
wrapped here with a timer (the names below), in a fresh process per repeat, the import of
TensorFlow excluded; a row is the median over ``--repeats``. Tracing is epoch 1's time minus the
median of the later epochs (``epoch_time_s``, validation included).

The fixed cost is everything but the epochs after the first: from the start of ``train()`` to
the first epoch, the tracing, and from the end of the last epoch to the end of ``train()``. The
issue's target is at most 5 s. The run's SQLite tracking store exists before it starts, as for
every run but a store's first (and every run of the test suite, which copies an empty store):
MLflow creates a store's tables on first use by running its schema migrations, about 1 s on 2
cores, timed here apart in its own row.

By default each variant runs twice: ``VARIANT:graph-rewrites`` keeps Grappler's rewriting of
each traced function on, as before 2026-11-27, beside ``classify``'s start on a machine without
a GPU (:func:`classifier.cli.startup.graph_rewrites_off`). Other cases:
``VARIANT:collector-default`` imports TensorFlow with Python's cycle collector as Python sets
it, as before 2026-11-27 (not :func:`classifier.cli.startup.uncollected_imports`);
``VARIANT:keras-export`` exports the bundle's LiteRT models as before 2026-11-26, through
Keras' ``model.export`` (a SavedModel written and read back), instead of the converter given
the model's call and freezing its graph directly (the same ops and outputs; a few dozen bytes
of the flatbuffer's metadata differ). The last rows cover the whole process: TensorFlow's
import, its CPU time at the end of the run (the import included), and from its start to its
exit (Python's exit collects what is left, too).

Usage:
    python benchmarks/run_fixed_cost.py                  # encoder and nbow, before and after, 3 repeats
    python benchmarks/run_fixed_cost.py --variants encoder:collector-default,encoder
    python benchmarks/run_fixed_cost.py --variants encoder:keras-export,encoder
    python benchmarks/run_fixed_cost.py --quick          # one repeat
    python benchmarks/run_fixed_cost.py --variants attention --repeats 5
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: (row, module, attribute): the functions timed, by where the run looks them up.
PARTS = (
    ("load the reviews", "classifier.training.train", "load_raw_splits"),
    ("build the vocabulary", "classifier.training.train", "build_vectorizer"),
    ("cache and batch the ids", "classifier.training.train", "make_datasets"),
    ("build the model", "classifier.training.train", "new_model"),
    ("n-gram features, once", "classifier.training.train", "fit_inputs"),
    ("MLflow: log the params", "classifier.training.train", "log_run_inputs"),
    ("MLflow: log the datasets", "classifier.training.train", "log_datasets"),
    ("all epochs (model.fit)", "keras.Model", "fit"),
    ("calibrate", "classifier.training.finish", "calibrate"),
    ("evaluate on test", "classifier.training.finish", "head_logits"),
    ("plot: training curves", "classifier.plots", "plot_training_curves"),
    ("plot: confusion matrix", "classifier.plots", "plot_confusion_matrix"),
    ("plot: reliability", "classifier.plots", "plot_reliability_diagram"),
    ("bundle: LiteRT exports", "classifier.serving.bundle", "_export_litert"),
    ("bundle: tokenizer check", "classifier.serving.bundle", "_check_standardization"),
    ("bundle: reproduction check", "classifier.serving.bundle", "_check_reproduces"),
    ("bundle: explain parts check", "classifier.serving.bundle", "_check_explains"),
    ("bundle, all", "classifier.training.finish", "write_bundle"),
    ("log and register the model", "classifier.training.finish", "log_pyfunc_model"),
)
FIXED_PARTS = ("start to epoch 1", "tracing (epoch 1 - later)", "last epoch to exit")
NEW_STORE = "a new store's creation (its first run only)"
IMPORT = "the process: TensorFlow's import"
PROCESS_CPU = "the process: CPU time at the run's end"
WHOLE = "the process: start to exit (wall)"
WHOLE_CPU = "the process: CPU time, start to exit"


def keras_export(classifier, path: Path, shown: str) -> None:
    """The bundle's export as it was before 2026-11-26: Keras' ``model.export(format="litert")``,
    which writes a SavedModel and converts it (the same ops and outputs)."""
    import tensorflow as tf

    signature = [tf.TensorSpec((None, None), tf.int64, name="token_ids")]
    with tempfile.TemporaryDirectory(prefix="bundle-export-") as workdir:
        target = Path(workdir) / "classifier.tflite"
        classifier.export(
            str(target),
            format="litert",
            input_signature=signature,
            verbose=False,
            target_spec={"supported_ops": [tf.lite.OpsSet.TFLITE_BUILTINS]},
        )
        path.write_bytes(target.read_bytes())


def one_run(case: str) -> dict[str, float]:
    """Train one fixture run of ``case`` (a variant, ``:keras-export`` for the export before)
    in this process; seconds per part."""
    variant, _, option = case.partition(":")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sys.path.insert(0, str(ROOT))
    from classifier.cli import startup

    if option == "collector-default":
        startup.uncollected_imports = contextlib.nullcontext
    if option == "graph-rewrites":
        startup.graph_rewrites_off = lambda: False
    started = time.perf_counter()
    startup.import_tensorflow()
    import_seconds = time.perf_counter() - started
    import mlflow

    from classifier.config.schema import load_config
    from classifier.training.train import train
    from tests.conftest import fixture_data_overrides, write_fixture_tfds

    seconds: dict[str, float] = {}
    run_started = [time.perf_counter()]
    for name, module, attribute in PARTS:
        owner = _owner(module)
        original = getattr(owner, attribute)
        if option == "keras-export" and attribute == "_export_litert":
            original = keras_export

        def timed(*args, __original=original, __name=name, **kwargs):
            started = time.perf_counter()
            seconds.setdefault(f"_{__name} started", started - run_started[0])
            try:
                return __original(*args, **kwargs)
            finally:
                seconds[__name] = seconds.get(__name, 0.0) + time.perf_counter() - started

        setattr(owner, attribute, timed)
    work = Path(tempfile.mkdtemp(prefix="fixed-cost-"))
    data = write_fixture_tfds(work / "tfds")
    os.environ["MLFLOW_TRACKING_URI"] = f"sqlite:///{work / 'mlflow.db'}"
    started = time.perf_counter()  # a store's first run creates it: once, not every run's
    mlflow.MlflowClient().search_experiments()
    seconds[NEW_STORE] = time.perf_counter() - started
    cfg = load_config(
        None,
        [
            *fixture_data_overrides(data),
            f"model.variant={variant}",
            "model.num_layers=1",
            "model.ngram_buckets=4096",
            "train.epochs=4",
            "train.early_stopping_patience=null",
            "train.learning_rate=0.01",
            "train.registered_model=fixed-cost",
            "experiment=fixed-cost",
        ],
    )
    run_started[0] = time.perf_counter()
    result = train(cfg, echo=lambda line: None)
    seconds["train(), whole"] = time.perf_counter() - run_started[0]
    epochs = mlflow.MlflowClient().get_metric_history(result.run_id, "epoch_time_s")
    times = [metric.value for metric in sorted(epochs, key=lambda m: m.step)]
    later = statistics.median(times[1:])
    fit, fit_started = seconds["all epochs (model.fit)"], seconds["_all epochs (model.fit) started"]
    seconds["tracing (epoch 1 - later)"] = times[0] - later
    seconds["epochs after the first"] = later * (len(times) - 1)
    seconds["start to epoch 1"] = fit_started
    seconds["last epoch to exit"] = seconds["train(), whole"] - fit_started - fit
    seconds["fixed cost"] = sum(seconds[part] for part in FIXED_PARTS)
    seconds[IMPORT] = import_seconds
    seconds[PROCESS_CPU] = time.process_time()
    shutil.rmtree(work, ignore_errors=True)
    return {key: value for key, value in seconds.items() if not key.startswith("_")}


def _owner(module: str):
    if module == "keras.Model":
        import keras

        return keras.Model
    return importlib.import_module(module)


def _children_cpu() -> float:
    """User and system seconds of this process's ended children."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def benchmark(args: argparse.Namespace) -> None:
    from machine import cpu_model

    repeats = 1 if args.quick else args.repeats
    results: dict[str, list[dict[str, float]]] = {}
    for _ in range(repeats):
        for variant in args.variants.split(","):
            cpu, started = _children_cpu(), time.perf_counter()
            done = subprocess.run(
                [sys.executable, __file__, "--one", variant],
                capture_output=True,
                text=True,
                cwd=ROOT,
                check=False,
            )
            whole = {WHOLE: time.perf_counter() - started, WHOLE_CPU: _children_cpu() - cpu}
            if done.returncode != 0:
                raise SystemExit(f"{variant}: exit {done.returncode}\n{done.stderr[-2000:]}")
            run = json.loads(done.stdout.strip().splitlines()[-1])
            results.setdefault(variant, []).append({**run, **whole})
    variants = list(results)
    print(
        f"A fixture run's fixed cost by part (120/40/80 reviews, 4 epochs), seconds, median of "
        f"{repeats}; {cpu_model()}, {os.cpu_count()} cores, TensorFlow's import excluded "
        "but in the rows of the process\n"
    )
    print("| part | " + " | ".join(variants) + " |")
    print("|---|" + "---:|" * len(variants))
    rows = (
        [NEW_STORE]
        + [name for name, _, _ in PARTS]
        + [
            "epochs after the first",
            *FIXED_PARTS,
            "fixed cost",
            "train(), whole",
            IMPORT,
            PROCESS_CPU,
            WHOLE,
            WHOLE_CPU,
        ]
    )
    for row in rows:
        cells = []
        for variant in variants:
            values = [run[row] for run in results[variant] if row in run]
            cells.append(f"{statistics.median(values):.2f}" if values else "-")
        bold = "**" if row == "fixed cost" else ""
        print(f"| {bold}{row}{bold} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--variants",
        default="encoder:graph-rewrites,encoder,nbow:graph-rewrites,nbow",
        help="variants to train; VARIANT:graph-rewrites keeps Grappler on, "
        "VARIANT:collector-default imports TensorFlow with Python's collector as it is, both as "
        "before 2026-11-27; VARIANT:keras-export exports as before 2026-11-26",
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="one repeat")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a child: one run, JSON out
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_run(args.one)))
    else:
        benchmark(args)


if __name__ == "__main__":
    main()

"""Helpers of the sweep tests: a spec on the fixture data, and the CLI runner."""

from __future__ import annotations

from pathlib import Path

import yaml
from click.testing import CliRunner

from classifier.cli.main import cli

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENT = "sweep-tests"
REGISTERED = "imdb-sweep-test"
EPOCHS = 2


def spec_tree(fixture_data_dir: Path, **changes) -> dict:
    """Two variants times two seeds, two epochs each, on the fixture data."""
    tree = {
        "name": "tiny",
        "base": str(ROOT / "configs" / "default.yaml"),
        "experiment": EXPERIMENT,
        "overrides": {
            "data.data_dir": str(fixture_data_dir),
            "data.download": False,
            "data.train_size": 120,
            "data.val_size": 40,
            "data.test_size": 80,
            "data.vocab_size": 64,
            "data.sequence_length": 24,
            "data.batch_size": 16,
            "model.num_layers": 1,
            "train.epochs": EPOCHS,
            "train.early_stopping_patience": None,
            "train.learning_rate": 0.01,
            "train.registered_model": REGISTERED,
            "train.refit": False,  # tests/test_refit.py covers the refit
        },
        "points": [
            {"model.variant": "attention"},
            {"model.variant": "encoder", "model.position": "learned"},
        ],
        "grid": {"train.seed": [1, 2]},
    }
    tree.update(changes)
    return tree


def write_spec(path: Path, tree: dict) -> Path:
    path.write_text(yaml.safe_dump(tree, sort_keys=False))
    return path


def one_point_spec(tmp_path: Path, fixture_data_dir: Path, experiment: str) -> Path:
    """A sweep of one point (``attention``, seed 1, one epoch) named after its experiment."""
    tree = spec_tree(fixture_data_dir, experiment=experiment, name=experiment)
    tree["points"] = [{"model.variant": "attention"}]
    tree["grid"] = {"train.seed": [1]}
    tree["overrides"]["train.epochs"] = 1
    return write_spec(tmp_path / f"{experiment}.yaml", tree)


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), prog_name="classify")

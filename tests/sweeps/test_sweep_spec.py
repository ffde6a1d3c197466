"""Sweep specs: points times grid, dry runs, bad specs as one line."""

from __future__ import annotations

import pytest

from classifier.config.schema import flatten, load_config
from classifier.errors import ConfigError
from classifier.sweeps.spec import expand, load_spec, spec_hash
from tests.conftest import ROOT
from tests.sweep_helpers import EPOCHS, EXPERIMENT, invoke, spec_tree, write_spec


def test_spec_expands_points_times_grid(spec_path):
    points = expand(load_spec(spec_path))
    assert [p.name for p in points] == [
        "attention seed=1",
        "attention seed=2",
        "encoder seed=1",
        "encoder seed=2",
    ]
    assert points[2].overrides == {
        "model.variant": "encoder",
        "model.position": "learned",
        "train.seed": 1,
    }
    cfg = points[3].config
    assert (cfg.experiment, cfg.model.variant, cfg.model.position) == (
        EXPERIMENT,
        "encoder",
        "learned",
    )
    assert (cfg.train.seed, cfg.train.epochs, cfg.data.train_size) == (2, EPOCHS, 120)
    assert cfg.train.early_stopping_patience is None
    assert len({p.config_hash for p in points}) == 4


def test_dry_run_lists_points_without_touching_mlflow(spec_path, tmp_path, monkeypatch):
    database = tmp_path / "untouched.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{database}")
    result = invoke("sweep", str(spec_path), "--dry-run")
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    points = expand(load_spec(spec_path))
    assert lines[0].startswith(f"sweep tiny: 4 points in experiment {EXPERIMENT} (base ")
    assert lines[0].endswith(f"spec hash {spec_hash(points)})")
    assert lines[1].startswith("every point: data.data_dir=")
    for line, point in zip(lines[2:], points, strict=True):
        assert line.split()[0] == str(point.index)
        assert point.name in line
        assert "train.seed=" in line and line.endswith(f"config {point.config_hash}")
    assert not database.exists()


def test_yaml_values_survive_the_override_round_trip(tmp_path, fixture_data_dir):
    tree = spec_tree(fixture_data_dir, points=None, grid={"train.learning_rate": [1.0e-5, 0.5]})
    tree["overrides"]["data.data_dir"] = "null"  # a string, not null: kept as the text "null"
    points = expand(load_spec(write_spec(tmp_path / "s.yaml", tree)))
    assert [p.config.train.learning_rate for p in points] == [1.0e-5, 0.5]
    assert points[0].config.data.data_dir == "null"
    assert [p.label for p in points] == [  # no points: the base config's variant
        "attention (learning_rate=1e-05)",
        "attention (learning_rate=0.5)",
    ]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"colour": "red"}, "unknown key 'colour'; a sweep spec takes name, base, experiment"),
        ({"base": "missing.yaml"}, "base config not found: "),
        ({"name": 3}, "name must be a non-empty string, got 3"),
        ({"points": {"model.variant": "mha"}}, "points must be a non-empty list of overrides"),
        ({"grid": {"train.seed": 1}}, "grid.train.seed must be a non-empty list of values, got 1"),
        ({"grid": {"train.seed": []}}, "grid.train.seed must be a non-empty list of values"),
        ({"points": [{"model.colour": "red"}]}, "unknown config key 'model.colour'"),
        ({"points": [{"model.variant": "rnn"}]}, "model.variant='rnn' is not one of"),
        (
            {"grid": {"model.num_heads": [2, 3]}},
            "model.embed_dim=16 is not divisible by model.num_heads=3",
        ),
        ({"grid": {"train.epochs": ["many"]}}, "train.epochs must be int, got str 'many'"),
        (
            {"points": [{"experiment": "other"}]},
            "points[1].experiment: a sweep cannot set 'experiment'",
        ),
        (
            {"points": [{"model.variant": "mha"}, {"model.variant": "mha"}]},
            "points 1 and 3 are the same run",
        ),
        ({"overrides": {"train.seed": [1, 2]}}, "overrides.train.seed must be a single value"),
        (
            {"points": [{"recipe": "rnn"}]},
            "points[1].recipe: no recipe 'rnn' in ",
        ),
        ({"points": [{"recipe": ["nbow"]}]}, "points[1].recipe: no recipe ['nbow'] in "),
        (
            {"overrides": {"recipe": "nbow"}},
            "overrides.recipe: a recipe is named by a point ({recipe: NAME}), not here",
        ),
        (
            {"grid": {"recipe": ["nbow", "bow"]}},
            "grid.recipe: a recipe is named by a point ({recipe: NAME}), not here",
        ),
    ],
)
def test_bad_specs_are_rejected_naming_the_key(tmp_path, fixture_data_dir, change, message):
    spec = write_spec(tmp_path / "bad.yaml", spec_tree(fixture_data_dir, **change))
    with pytest.raises(ConfigError) as error:
        expand(load_spec(spec))
    assert message in str(error.value)
    assert str(error.value).startswith(f"sweep spec {spec}")


def test_bad_spec_is_one_line_with_exit_code_2(tmp_path, fixture_data_dir):
    spec = write_spec(
        tmp_path / "bad.yaml", spec_tree(fixture_data_dir, grid={"model.dropout": [1.5]})
    )
    result = invoke("sweep", str(spec), "--dry-run")
    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert result.output.startswith(f"classify: error: sweep spec {spec}, point 1 (")
    assert "model.dropout must be in [0, 1), got 1.5" in result.output
    missing = invoke("sweep", str(tmp_path / "nope.yaml"))
    assert missing.exit_code == 2 and "not found" in missing.output


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"name: caf\xe9\n", "is not UTF-8 text: byte 0xe9 on line 1"),
        (b"name: a\nname: b\n", "is not valid YAML: found duplicate key 'name'"),
        (b"- a list\n", "must be a mapping of keys to values, not a list"),
        (b"grid: {train.seed: [1\n", "is not valid YAML: "),
    ],
    ids=["not-utf8", "duplicate-key", "a-list", "bad-yaml"],
)
def test_unreadable_specs_are_one_line_naming_the_file(tmp_path, content, message):
    spec = tmp_path / "spec.yaml"
    spec.write_bytes(content)
    result = invoke("sweep", str(spec), "--dry-run")
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1 and "Traceback" not in result.output
    assert result.output.startswith(f"classify: error: sweep spec {spec} ")
    assert message in result.output


# --- recipes by reference ---------------------------------------------------------------------

#: What configs/sweeps/variants.yaml sets over each recipe, besides the seed: no refit, its own
#: registered model and experiment.
SWEEP_KEYS = {"train.refit", "train.registered_model", "train.seed", "experiment"}


def test_each_point_of_make_sweep_trains_its_recipe_as_the_recipe_says():
    spec = load_spec("configs/sweeps/variants.yaml")
    points = expand(spec)
    assert len(points) == 27
    for point in points:
        recipe = load_config(f"configs/variants/{point.overrides['recipe']}.yaml")
        own = {key for key in point.overrides if key not in ("recipe", "train.seed")}
        differ = {
            key
            for key, value in flatten(point.config.to_dict()).items()
            if flatten(recipe.to_dict()).get(key) != value
        }
        assert differ <= SWEEP_KEYS | own, (point.name, differ - SWEEP_KEYS - own)
        assert not point.config.train.refit and point.config.train.seed in (1, 2, 3)
    # make train's model, trained by the sweep with make train's settings (but its refit).
    nbow = next(p for p in points if p.overrides["recipe"] == "nbow").config
    train = load_config("configs/train.yaml")
    assert (nbow.data.batch_size, nbow.train.learning_rate) == (1024, 0.03)
    assert (nbow.data.batch_size, nbow.train.learning_rate) == (
        train.data.batch_size,
        train.train.learning_rate,
    )
    bow = next(p for p in points if p.overrides["recipe"] == "bow").config
    assert bow.train.lazy_adam


def test_a_point_changes_its_recipe_and_the_spec_overrides_apply_over_it(tmp_path):
    spec = write_spec(
        tmp_path / "recipes.yaml",
        {
            "base": str(ROOT / "configs" / "default.yaml"),
            "overrides": {"train.epochs": 2},
            "points": [{"recipe": "encoder", "model.position": "learned"}],
        },
    )
    (point,) = expand(load_spec(spec))
    encoder = load_config("configs/variants/encoder.yaml")
    assert point.config.model.position == "learned"
    assert point.config.model.dropout == encoder.model.dropout == 0.3
    assert point.config.train.epochs == 2 != encoder.train.epochs

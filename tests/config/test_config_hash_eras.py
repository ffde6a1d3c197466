"""Runs recorded before config keys were added are still recognised: a sweep continued after
an upgrade skips its finished points instead of training them again."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import mlflow
from mlflow.tracking import MlflowClient

from classifier.config.schema import Config, flatten, load_config
from classifier.runs.tracking import CONFIG_HASH_TAG, SPEC_HASH_TAG
from classifier.sweeps.spec import expand, load_spec, spec_hashes
from tests.sweep_helpers import invoke, one_point_spec


def dotted(names: dict[str, str]) -> frozenset[str]:
    """``{"data": "a b"}`` -> ``{"data.a", "data.b"}`` (``""``: keys at the top)."""
    return frozenset(
        f"{section}.{name}" if section else name
        for section, text in names.items()
        for name in text.split()
    )


#: The config's keys before commit 91200a2 added model.init_from and the pretrain section.
KEYS_BEFORE_PRETRAINING = dotted(
    {
        "": "experiment",
        "data": "data_dir download train_size val_size test_size vocab_size sequence_length"
        " truncate batch_size bucket_by_length",
        "model": "variant embed_dim num_heads ff_dim num_layers dropout position scale_embeddings"
        " norm_first ngram_buckets l2",
        "train": "epochs learning_rate seed early_stopping_patience refit registered_model",
    }
)
#: ...and after it, until keys added later were left out of the hash at their defaults.
KEYS_AFTER_PRETRAINING = KEYS_BEFORE_PRETRAINING | dotted(
    {
        "model": "init_from",
        "pretrain": "objective experiment registered_model unlabelled_size held_out epochs"
        " learning_rate mask_rate noise_density mean_span_length",
    }
)


def hash_of(cfg: Config, keys: frozenset[str]) -> str:
    """The hash of ``cfg`` by its ``keys`` alone: what Config.config_hash() computed when they
    were all the keys there were."""
    tree: dict = {}
    for key, value in flatten(cfg.to_dict()).items():
        if key in keys:
            section, _, name = key.rpartition(".")
            (tree.setdefault(section, {}) if section else tree)[name] = value
    return hashlib.sha256(json.dumps(tree, sort_keys=True).encode()).hexdigest()[:12]


def hash_before_pretraining(cfg: Config) -> str:
    """What Config.config_hash() computed before commit 91200a2 added model.init_from and the
    pretrain section."""
    return hash_of(cfg, KEYS_BEFORE_PRETRAINING)


def test_the_second_hash_is_the_one_runs_before_the_pretraining_keys_carry():
    # bow's recipe before train.lazy_adam: what runs recorded then could be
    cfg = load_config("configs/variants/bow.yaml", ["train.seed=3", "train.lazy_adam=false"])
    assert cfg.config_hashes() == (cfg.config_hash(), hash_before_pretraining(cfg))
    assert cfg.config_hash() != hash_before_pretraining(cfg)


def test_a_config_those_runs_could_not_have_has_no_second_hash():
    cfg = load_config(
        "configs/variants/encoder.yaml", ["model.init_from=runs:/0123456789abcdef0123456789abcdef"]
    )
    assert cfg.config_hashes() == (cfg.config_hash(), cfg.config_hash())
    pretraining = load_config(None, ["pretrain.epochs=3"])
    assert pretraining.config_hashes() == (pretraining.config_hash(),) * 2


def test_a_sweep_recorded_before_the_pretraining_keys_is_continued(
    store, fixture_data_dir, tmp_path
):
    spec = one_point_spec(tmp_path, fixture_data_dir, "eras")
    first = invoke("sweep", str(spec))
    assert first.exit_code == 0, first.output
    mlflow.set_tracking_uri(store)
    # Tag the parent and its child as the code before 91200a2 did.
    points = expand(load_spec(spec))
    client = MlflowClient()
    experiment_id = client.get_experiment_by_name("eras").experiment_id
    (parent,) = mlflow.search_runs(
        [experiment_id], "tags.sweep_name = 'eras'", output_format="list"
    )
    (child,) = mlflow.search_runs([experiment_id], "tags.sweep_point = '1'", output_format="list")
    client.set_tag(parent.info.run_id, SPEC_HASH_TAG, spec_hashes(points)[1])
    client.set_tag(child.info.run_id, CONFIG_HASH_TAG, hash_before_pretraining(points[0].config))
    # Sweeps of that time had no Optuna study either: a study for the old records is made anew.
    Path(store.removeprefix("sqlite:///")).with_name("sweeps.db").unlink()
    again = invoke("sweep", str(spec))
    assert again.exit_code == 0, again.output
    assert f"parent run {parent.info.run_id} in experiment eras (continuing)" in again.output
    assert f"skip [1/1] attention seed=1: finished in run {child.info.run_id}" in again.output
    assert "train [1/1]" not in again.output


def test_keys_added_later_leave_the_hash_unchanged_at_their_old_value():
    cfg = load_config("configs/variants/encoder.yaml", ["train.seed=2"])
    before = hash_of(cfg, KEYS_AFTER_PRETRAINING)
    assert cfg.config_hash() == before
    changed = load_config("configs/variants/encoder.yaml", ["train.seed=2", "train.clipnorm=1"])
    assert changed.config_hash() != before
    lazy = load_config("configs/variants/encoder.yaml", ["train.seed=2", "train.lazy_adam=true"])
    assert lazy.config_hash() != before

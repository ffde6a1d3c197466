"""One rule keeps config hashes (issue 58): a key added later with a default leaves every hash
as it was while it holds that default, with no table to add it to; away from it, it counts."""

from __future__ import annotations

import dataclasses

import pytest

from classifier.config.hashing import HASHED
from classifier.config.schema import Config, DataConfig, flatten, load_config
from classifier.sweeps.spec import expand, load_spec, spec_hashes
from tests.conftest import ROOT


@dataclasses.dataclass
class GrownData(DataConfig):
    """DataConfig with two keys added later (as ``data.label_map`` and ``data.phrases`` were)."""

    later_text: str | None = None
    later_flag: bool = False


@dataclasses.dataclass
class NewSection:
    """A whole section added later."""

    folds: int = 1
    shuffle: bool = False


@dataclasses.dataclass
class GrownConfig(Config):
    data: GrownData = dataclasses.field(default_factory=GrownData)
    later: NewSection = dataclasses.field(default_factory=NewSection)


def grown(cfg: Config, later: NewSection | None = None, **data_keys) -> GrownConfig:
    """``cfg`` under the grown schema: the new keys at their defaults unless given."""
    data = GrownData(**dataclasses.asdict(cfg.data), **data_keys)
    return GrownConfig(
        experiment=cfg.experiment,
        data=data,
        model=cfg.model,
        train=cfg.train,
        pretrain=cfg.pretrain,
        later=later or NewSection(),
    )


CONFIGS = sorted(
    str(path.relative_to(ROOT))
    for path in (ROOT / "configs").rglob("*.yaml")
    if "sweeps" not in path.parts
)


@pytest.mark.parametrize("path", CONFIGS)
def test_new_keys_at_their_defaults_leave_both_hashes_of_a_shipped_config(path):
    cfg = load_config(ROOT / path)
    assert grown(cfg).config_hashes() == cfg.config_hashes()


def test_new_keys_at_their_defaults_leave_a_sweeps_hashes():
    points = expand(load_spec(ROOT / "configs/sweeps/quick.yaml"))
    before = spec_hashes(points)
    for point in points:
        point.config = grown(point.config)
    assert spec_hashes(points) == before


@pytest.mark.parametrize(
    "changed",
    [
        {"later_text": "0=negative"},
        {"later_flag": True},
        {"later": NewSection(folds=5)},
        {"later": NewSection(shuffle=True)},
    ],
    ids=str,
)
def test_a_new_key_away_from_its_default_changes_the_hash(changed):
    cfg = load_config(ROOT / "configs/default.yaml")
    assert grown(cfg, **changed).config_hash() != cfg.config_hash()
    assert grown(cfg, **changed).config_hash() != grown(cfg).config_hash()


def test_every_always_hashed_key_is_a_key_of_the_config():
    # A misspelt one would leave the hash at its default, and every hash would change.
    assert set(flatten(Config().to_dict())) >= HASHED

"""Config files: reading, YAML, ``extends``; every bad file is one ConfigError line naming it."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from classifier.cli.main import cli
from classifier.config import yaml_files
from classifier.config.schema import Config, ConfigError, load_config


def write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def error_of(path, overrides=()) -> str:
    with pytest.raises(ConfigError) as raised:
        load_config(path, overrides)
    message = str(raised.value)
    assert "\n" not in message
    return message


# --------------------------------------------------------------------------- read_yaml_mapping


def test_read_yaml_mapping_returns_the_mapping(tmp_path):
    assert (
        yaml_files.read_yaml_mapping(Path("configs/smoke.yaml"), "config")["extends"]
        == "default.yaml"
    )
    assert (
        yaml_files.read_yaml_mapping(write(tmp_path / "empty.yaml", "# nothing\n"), "sweep spec")
        == {}
    )
    bom = write(tmp_path / "bom.yaml", "\ufeffexperiment: été\n".encode())
    assert yaml_files.read_yaml_mapping(bom, "config") == {"experiment": "été"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"experiment: caf\xe9\n", "is not UTF-8 text: byte 0xe9 on line 1"),
        (b"# \xff\nmodel: {}\n", "is not UTF-8 text: byte 0xff on line 1"),
        (b"model:\n  variant: \x80\n", "is not UTF-8 text: byte 0x80 on line 2"),
        ("- 1\n- 2\n", "must be a mapping of keys to values, not a list"),
        ("just text\n", "must be a mapping of keys to values, not a str"),
        ("model: [unclosed\n", "is not valid YAML: expected ',' or ']', but got '<stream end>'"),
        ("model:\n\tnum_heads: 2\n", "is not valid YAML: found character '\\t' that cannot"),
        ("model:\n  num_heads: 2\n  num_heads: 4\n", "found duplicate key 'num_heads' (line 3,"),
        ("experiment: a\x07b\n", "is not valid YAML: character '\\x07' is not allowed (line 1)"),
        ("experiment: 2024-13-45\n", "is not valid YAML: month must be in 1..12"),
        ("train:\n  epochs: " + "9" * 5000 + "\n", "is not valid YAML: Exceeds the limit (4300"),
        (
            "model:\n  num_heads: 2\nmodel:\n  embed_dim: 8\n",
            "found duplicate key 'model' (line 3,",
        ),
    ],
)
def test_bad_files_are_one_line_naming_the_file(tmp_path, text, message):
    path = write(tmp_path / "bad.yaml", text)
    for what in ("config", "sweep spec"):
        with pytest.raises(ConfigError) as raised:
            yaml_files.read_yaml_mapping(path, what)
        assert str(raised.value).startswith(f"{what} {path} ")
        assert message in str(raised.value) and "\n" not in str(raised.value)
    assert error_of(path).startswith(f"config {path} ")


def test_deep_nesting_is_one_line(tmp_path):
    path = write(tmp_path / "deep.yaml", "[" * 800 + "]" * 800 + "\n")
    with pytest.raises(ConfigError, match=r"^sweep spec .*deep.yaml is nested too deeply$"):
        yaml_files.read_yaml_mapping(path, "sweep spec")


@pytest.mark.parametrize("text", ["1: a\nfoo: {}\n", "~: a\nfoo: 1\n", "model:\n  1: a\n  x: 2\n"])
def test_keys_of_mixed_types_are_named(tmp_path, text):
    assert "unknown config key" in error_of(write(tmp_path / "keys.yaml", text))


def test_merge_keys_are_not_duplicates(tmp_path):
    path = write(
        tmp_path / "merge.yaml",
        "shared: &shared {num_heads: 4, embed_dim: 32}\nmodel:\n  <<: *shared\n  num_heads: 8\n",
    )
    assert yaml_files.read_yaml_mapping(path, "config")["model"] == {
        "num_heads": 8,
        "embed_dim": 32,
    }


def test_unreadable_files_are_one_line(tmp_path, monkeypatch):
    assert error_of(tmp_path) == f"config {tmp_path} is a directory, not a file"
    assert error_of(tmp_path / "none.yaml") == f"config file not found: {tmp_path / 'none.yaml'}"
    path = write(tmp_path / "locked.yaml", "experiment: x\n")

    def denied(self):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", denied)
    assert error_of(path) == f"config {path} cannot be read: Permission denied"


# --------------------------------------------------------------------------- extends


@pytest.mark.parametrize(
    ("value", "shown"),
    [("5", "int 5"), ("[base.yaml]", "list ['base.yaml']"), ("", "null"), ("true", "bool True"),
     ("''", "str ''"), ("{a: 1}", "dict {'a': 1}")],
)  # fmt: skip
def test_extends_must_name_a_file(tmp_path, value, shown):
    path = write(tmp_path / "child.yaml", f"extends: {value}\n")
    assert error_of(path) == (
        f"config {path}: extends must name a YAML file (relative to this one), got {shown}"
    )


def test_extends_a_missing_file_names_both(tmp_path):
    path = write(tmp_path / "child.yaml", "extends: base/nothere.yaml\n")
    assert error_of(path) == (
        f"config {path} extends {tmp_path / 'base/nothere.yaml'}, which does not exist"
    )
    write(tmp_path / "dir.yaml", "extends: base\n")
    (tmp_path / "base").mkdir()
    assert error_of(tmp_path / "dir.yaml").endswith(
        f"extends {tmp_path / 'base'}, which is a directory"
    )


def test_extends_cycles_are_named(tmp_path):
    a, b, c = (tmp_path / name for name in ("a.yaml", "b.yaml", "c.yaml"))
    write(a, "extends: b.yaml\n")
    write(b, "extends: a.yaml\n")
    assert error_of(a) == f"config {b} extends {a}, which makes a cycle: {a} -> {b} -> {a}"
    write(b, "extends: c.yaml\n")
    write(c, "extends: ./b.yaml\n")
    assert error_of(a) == (
        f"config {c} extends {tmp_path / './b.yaml'}, which makes a cycle: {b} -> {c} -> "
        f"{tmp_path / './b.yaml'}"
    )
    write(a, "extends: a.yaml\n")
    assert error_of(a) == f"config {a} extends itself"


def test_a_section_with_every_key_commented_out_is_empty(tmp_path):
    write(tmp_path / "base.yaml", "model:\n  num_heads: 4\n")
    path = write(tmp_path / "child.yaml", "extends: base.yaml\nmodel:\n  # num_heads: 8\ndata:\n")
    cfg = load_config(path)
    assert cfg.model.num_heads == 4 and cfg.data == Config().data
    assert load_config(path, ["model.embed_dim=32"]).model.embed_dim == 32


# --------------------------------------------------------------------------- the command line


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--set", "train.learning_rate=.nan"], "train.learning_rate must be a finite number"),
        (["--set", "train.registered_model=a/b"], "train.registered_model='a/b' cannot be"),
        (["--set", "model.variant.x=1"], "'model.variant' is a value, not a section"),
        (["--config", "BAD_UTF8"], "is not UTF-8 text"),
        (["--config", "EXTENDS_5"], "extends must name a YAML file"),
    ],
)
def test_cli_prints_one_line_and_exits_2(tmp_path, args, message):
    write(tmp_path / "BAD_UTF8", b"experiment: caf\xe9\n")
    write(tmp_path / "EXTENDS_5", "extends: 5\n")
    args = [str(tmp_path / arg) if arg.isupper() else arg for arg in args]
    # Were the config accepted, no data: the command fails at once instead of downloading.
    no_data = ["--data-dir", str(tmp_path / "none"), "--set", "data.download=false"]
    result = CliRunner().invoke(cli, ["data", *no_data, *args], prog_name="classify")
    assert result.exit_code == 2, result.output
    lines = result.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith("classify: error: ") and message in lines[0]


REFERENCE = {"attention": 20, "mha": 10, "block": 10, "block_pos": 10}


@pytest.mark.parametrize("variant", sorted(REFERENCE))
def test_reference_configs_have_the_reference_settings(variant):
    cfg = load_config(f"configs/reference/{variant}.yaml")
    assert (cfg.model.variant, cfg.train.epochs) == (variant, REFERENCE[variant])
    assert (cfg.model.embed_dim, cfg.model.num_heads, cfg.model.ff_dim) == (16, 2, 64)
    assert (cfg.data.vocab_size, cfg.data.sequence_length, cfg.data.batch_size) == (
        10_000,
        256,
        512,
    )
    assert (cfg.data.train_size, cfg.data.val_size, cfg.data.truncate) == (15_000, 10_000, "tail")
    assert (cfg.model.dropout, cfg.train.learning_rate) == (0.1, 0.001)
    assert cfg.train.early_stopping_patience is None


def test_the_reference_sweep_is_the_reference_configs():
    from classifier.sweeps.spec import expand, load_spec

    points = expand(load_spec("configs/sweeps/reference.yaml"))
    assert len(points) == 12
    for point in points:
        alone = load_config(f"configs/reference/{point.config.model.variant}.yaml")
        alone.train.seed = point.config.train.seed
        assert point.config == alone


SHIPPED = Path(__file__).resolve().parents[2] / "configs"


@pytest.mark.parametrize(
    "path",
    sorted(path for path in SHIPPED.rglob("*.yaml") if path.parent.name != "sweeps"),
    ids=lambda path: str(path.relative_to(SHIPPED)),
)
def test_every_shipped_config_loads(path):
    assert isinstance(load_config(path), Config)


#: The sweeps of one-off investigations, kept so that their results can be rerun.
RECORDS = SHIPPED.parent / "experiments" / "sweeps"


@pytest.mark.parametrize(
    "path",
    [*sorted((SHIPPED / "sweeps").glob("*.yaml")), *sorted(RECORDS.glob("*.yaml"))],
    ids=lambda path: str(path.relative_to(SHIPPED.parent)),
)
def test_every_shipped_sweep_spec_expands_to_valid_configs(path):
    from classifier.sweeps.spec import expand, load_spec, search_point

    spec = load_spec(path)
    if spec.search:  # a search draws its points: check its base with each range's ends
        for key, bounds in spec.search.space.items():
            ends = bounds if isinstance(bounds, list) else [bounds["low"], bounds["high"]]
            for value in ends:
                assert isinstance(search_point(spec, 1, {key: value}).config, Config)
        return
    points = expand(spec)
    assert points and all(isinstance(point.config, Config) for point in points)
    assert len({point.config.config_hash() for point in points}) == len(points)

"""Reading the project's YAML files (configs, sweep specs): UTF-8, a mapping at the top, no
repeated keys, YAML 1.2 integers; every problem one :class:`~classifier.errors.ConfigError` line
that names the file.

Example:
    >>> read_yaml_mapping(Path("configs/smoke.yaml"), "config")["extends"]
    'default.yaml'
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import yaml

from classifier.errors import ConfigError


def read_yaml_mapping(path: str | Path, what: str) -> dict[str, Any]:
    """Read a UTF-8 YAML file whose top level is a mapping (an empty file is ``{}``).

    Every problem (missing, a directory, unreadable, not UTF-8, bad YAML, a repeated key, not a
    mapping) raises one :class:`ConfigError` line that begins with ``what`` and the path.

    Example:
        >>> read_yaml_mapping(Path("configs/smoke.yaml"), "config")["extends"]
        'default.yaml'
        >>> read_yaml_mapping(Path("configs"), "sweep spec")
        Traceback (most recent call last):
        classifier.errors.ConfigError: sweep spec configs is a directory, not a file
    """
    path = Path(path)
    try:
        if not path.exists():
            raise ConfigError(f"{what} file not found: {path}")
        if not path.is_file():
            kind = "a directory" if path.is_dir() else "a special file"
            raise ConfigError(f"{what} {path} is {kind}, not a file")
        data = path.read_bytes()
    except OSError as error:  # a name too long, a permission, an I/O error
        raise ConfigError(f"{what} {path} cannot be read: {error.strerror or error}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        byte = data[error.start]
        raise ConfigError(
            f"{what} {path} is not UTF-8 text: byte {byte:#04x} on line {line}"
        ) from None
    try:
        tree = yaml.load(text, Loader=YamlLoader)
    except yaml.YAMLError as error:
        raise ConfigError(f"{what} {path} is not valid YAML: {yaml_problem(error, text)}") from None
    except RecursionError:
        raise ConfigError(f"{what} {path} is nested too deeply") from None
    except ValueError as error:  # from a constructor: 2024-13-45, an int of over 4,300 digits
        reason = str(error).split(";")[0]
        raise ConfigError(f"{what} {path} is not valid YAML: {reason}") from None
    if tree is None:
        return {}
    if not isinstance(tree, dict):
        kind = type(tree).__name__
        raise ConfigError(f"{what} {path} must be a mapping of keys to values, not a {kind}")
    return tree


class YamlLoader(yaml.SafeLoader):
    """PyYAML's safe loader; a repeated key is an error, and ints are decimal, 0x or 0b only."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # '<<: *base' then a key: an update
                continue
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, Hashable):
                continue  # PyYAML's own "found unhashable key" follows
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"found duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep)


# YAML 1.1 reads 010 as octal 8 and 1:30 as 90 (base 60): keep such text a string.
_INT = "tag:yaml.org,2002:int"
YamlLoader.yaml_implicit_resolvers = {
    first: [(tag, regex) for tag, regex in resolvers if tag != _INT]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
YamlLoader.add_implicit_resolver(
    _INT,
    re.compile(r"^[-+]?(?:0b[01_]+|0x[0-9a-fA-F_]+|0|[1-9][0-9_]*)$"),
    list("-+0123456789"),
)


def yaml_problem(error: yaml.YAMLError, text: str) -> str:
    if isinstance(error, yaml.reader.ReaderError):  # a control character
        line = text.count("\n", 0, error.position) + 1
        return f"character {chr(error.character)!r} is not allowed (line {line})"
    problem, mark = getattr(error, "problem", None), getattr(error, "problem_mark", None)
    if not problem:
        return " ".join(str(error).split())
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
    return " ".join(problem.split()) + where


def read_config_file(path: Path, chain: tuple[Path, ...] = ()) -> dict[str, Any]:
    """A config file as nested dicts, merged over the file it ``extends`` (relative to it),
    recursively; a cycle, a missing base or a bad ``extends`` value is a :class:`ConfigError`."""
    tree = read_yaml_mapping(path, "config")
    if "extends" not in tree:
        return tree
    name = tree.pop("extends")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(
            f"config {path}: extends must name a YAML file (relative to this one), got "
            f"{'null' if name is None else f'{type(name).__name__} {name!r}'}"
        )
    base = path.parent / name
    chain = (*chain, path)
    resolved = [file.resolve() for file in chain]
    if base.resolve() == path.resolve():
        raise ConfigError(f"config {path} extends itself")
    if base.resolve() in resolved:
        cycle = " -> ".join(map(str, [*chain[resolved.index(base.resolve()) :], base]))
        raise ConfigError(f"config {path} extends {base}, which makes a cycle: {cycle}")
    if not base.is_file():
        problem = "is a directory" if base.is_dir() else "does not exist"
        raise ConfigError(f"config {path} extends {base}, which {problem}")
    merged = read_config_file(base, chain)
    _merge(merged, tree)
    return merged


def _merge(base: dict[str, Any], update: dict[str, Any]) -> None:
    for key, value in update.items():
        if isinstance(base.get(key), dict) and value is None:
            continue  # a section whose keys are all commented out changes nothing
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value


#: A float written as text, as YAML 1.2 reads it (PyYAML's YAML 1.1 wants ``1.0e-3``), or nan
#: and inf as float() reads them (YAML: ``.nan``, ``.inf``), which ``schema.validate`` then
#: refuses.
_FLOAT_TEXT = re.compile(
    r"[-+]?((\.[0-9]+|[0-9]+(\.[0-9]*)?)(e[-+]?[0-9]+)?|nan|inf|infinity)", re.I
)


def typed_value(key: str, value: Any, hint: Any) -> Any:
    """A YAML ``value`` as config ``key``'s declared type ``hint`` (``int``, ``float | None``,
    ...): an int where a float is declared, a float written as text (``1e-3``, which YAML 1.1
    leaves a string); else a :class:`ConfigError` naming the key, the type and the value.

    Example:
        >>> typed_value("train.learning_rate", "1e-3", float)
        0.001
    """
    allowed = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    if value is None:
        if type(None) in allowed:
            return None
        raise ConfigError(f"{key} must not be null")
    for kind in allowed:
        if kind is bool and isinstance(value, bool):
            return value
        if kind is int and isinstance(value, int) and not isinstance(value, bool):
            return value
        if kind is float and isinstance(value, int | float) and not isinstance(value, bool):
            try:
                return float(value)
            except OverflowError:
                raise ConfigError(
                    f"{key} must be a finite number, got an int too large for a float"
                ) from None
        if kind is str and isinstance(value, str):
            return value
    if float in allowed and isinstance(value, str) and _FLOAT_TEXT.fullmatch(value):
        return float(value)  # 1e-3: YAML 1.1 reads it as text
    expected = " or ".join("null" if k is type(None) else k.__name__ for k in allowed)
    hint_text = ""
    if str in allowed and not isinstance(value, list | dict):  # 2024, yes, 2024-01-31
        hint_text = "; put it in quotes to keep it as text"
    raise ConfigError(f"{key} must be {expected}, got {_shown(value)}{hint_text}")


def _shown(value: Any) -> str:
    return "null" if value is None else f"{type(value).__name__} {value!r}"

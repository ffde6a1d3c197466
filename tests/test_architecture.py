"""The package's shape: no import cycles (module-level or inside functions), no module past
400 lines, and the modules a command needs before its slow imports import no TensorFlow."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "classifier"
MAX_LINES = 400


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Package modules that ``name`` imports anywhere in its file (a package means its
    ``__init__``; ``from package import module`` means the module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            found |= {f"{base}.{alias.name}" for alias in node.names} | {base}
    return {m for m in found if m in modules and m != name and not name.startswith(m + ".")}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    result = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while (top := stack.pop()) != node:
                component.append(top)
            if component:
                result.append(sorted([node, *component]))

    for node in graph:
        if node not in index:
            visit(node)
    return result


def test_no_import_cycles():
    modules = _modules()
    leaves = {name for name, path in modules.items() if path.name != "__init__.py"}
    # A package __init__ that re-exports its children is not a cycle: edges between modules only.
    graph = {name: _imports(name, modules[name], modules) & leaves for name in leaves}
    assert _cycles(graph) == []


def test_the_cycle_check_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_is_over_the_limit():
    sizes = {name: len(path.read_text().splitlines()) for name, path in _modules().items()}
    assert {name: size for name, size in sizes.items() if size > MAX_LINES} == {}


@pytest.mark.parametrize(
    "module",
    [
        "classifier.errors",
        "classifier.config",
        "classifier.reviews",
        "classifier.predict",
        "classifier.fast_predict",
        "classifier.startup",
    ],
)
def test_modules_needed_before_the_slow_imports_import_no_tensorflow(module):
    code = f"import sys, {module}; print(sorted(m for m in ('tensorflow', 'keras', 'mlflow') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_pyfunc_model_imports_no_tensorflow():
    # MLflow imports it to serve a model: with a bundle, serving needs no TensorFlow.
    code = "import sys, classifier.pyfunc; print(sorted(m for m in ('tensorflow', 'keras') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"

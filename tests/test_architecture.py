"""The package's shape: imports flow one way between its packages (module-level and inside
functions alike), no import cycles, at most five top-level modules, no module past 400 lines, and
the modules a command needs before its slow imports import no TensorFlow."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "classifier"
MAX_LINES = 400
MAX_TOP_LEVEL_MODULES = 5

#: The packages bottom to top: a module may import its own package and those on lower rows,
#: never a package on its row or above. (``__init__``/``__main__``: the package itself.)
LAYERS = (
    ("errors",),
    ("config",),
    ("evaluation",),
    ("data", "layers"),
    ("models",),
    ("plots",),
    ("runs",),
    ("serving",),
    ("pyfunc",),  # the class path that models registered before the folders pickled
    ("pretraining",),
    ("training",),
    ("explain", "sweeps"),
    ("cli",),
)
RANK = {package: rank for rank, row in enumerate(LAYERS) for package in row}


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


def _package(module: str) -> str:
    """The top-level package of ``classifier.X.y`` (``X``), or the module's own name at the top."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _against_the_direction(modules: dict[str, Path]) -> list[str]:
    wrong = []
    for name, path in sorted(modules.items()):
        here = _package(name)
        if here not in RANK:
            continue  # classifier/__init__ and __main__: the package itself
        for other in sorted(_imports(name, path, modules)):
            there = _package(other)
            if there != here and (there not in RANK or RANK[there] >= RANK[here]):
                wrong.append(f"{name} -> {other}")
    return wrong


def test_every_package_has_a_rank():
    packages = {_package(name) for name in _modules()} - {"", "__main__"}
    assert packages - set(RANK) == set()


def test_imports_flow_one_way_between_packages():
    assert _against_the_direction(_modules()) == []


def test_the_direction_check_finds_an_import_that_runs_back_up(tmp_path):
    package = tmp_path / "classifier"
    for folder, text in {
        "config": "from classifier.training import train\n",
        "training": "",
    }.items():
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
        (package / folder / "m.py").write_text(text)
    modules = {
        "classifier.config.m": package / "config" / "m.py",
        "classifier.training": package / "training" / "__init__.py",
        "classifier.training.train": package / "training" / "m.py",
    }
    assert _against_the_direction(modules) == [
        "classifier.config.m -> classifier.training",
        "classifier.config.m -> classifier.training.train",
    ]


def test_the_top_level_keeps_at_most_five_modules():
    top = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


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


def unnamed_modules(package: Path) -> list[str]:
    """The modules of ``package`` that its ``__init__`` docstring does not name (``name``)."""
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
    modules = sorted(path.stem for path in package.glob("*.py") if path.stem != "__init__")
    return [name for name in modules if f"``{name}``" not in doc]


def test_each_package_docstring_names_every_module_it_owns():
    # Module ownership is told in one place, each package's docstring (docs link to them).
    packages = sorted(path.parent for path in PACKAGE.glob("*/__init__.py"))
    assert {package.name: unnamed_modules(package) for package in packages} == {
        package.name: [] for package in packages
    }


def test_the_ownership_check_finds_a_module_its_package_does_not_name(tmp_path):
    (tmp_path / "__init__.py").write_text('"""Owns ``named``."""\n')
    (tmp_path / "named.py").write_text("")
    (tmp_path / "forgotten.py").write_text("")
    assert unnamed_modules(tmp_path) == ["forgotten"]


@pytest.mark.parametrize(
    "module",
    [
        "classifier.errors",
        "classifier.config.schema",
        "classifier.serving.reviews",
        "classifier.serving.predict",
        "classifier.serving.litert_engine",
        "classifier.cli.startup",
    ],
)
def test_modules_needed_before_the_slow_imports_import_no_tensorflow(module):
    code = f"import sys, {module}; print(sorted(m for m in ('tensorflow', 'keras', 'mlflow') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_pyfunc_model_imports_no_tensorflow():
    # MLflow imports it to serve a model: with a bundle, serving needs no TensorFlow.
    code = "import sys, classifier.serving.pyfunc; print(sorted(m for m in ('tensorflow', 'keras') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_make_bench_runs_every_script_in_benchmarks():
    # benchmarks/ holds what `make bench` runs (each with a --quick size); probes: experiments/.
    root = PACKAGE.parent
    makefile = (root / "Makefile").read_text()
    listed = makefile.split("BENCHMARKS :=", 1)[1].split("\nBENCH_OUT", 1)[0]
    listed_names = set(listed.replace("\\", " ").split())
    scripts = {path.stem for path in (root / "benchmarks").glob("*.py")} - {"machine"}
    assert listed_names == scripts
    for name in scripts:
        assert '"--quick"' in (root / "benchmarks" / f"{name}.py").read_text(), name

"""Every ``>>>`` example in the package's docstrings runs and prints what it says (the layers
and the Transformer have theirs in ``tests/layers/test_docstrings.py``). Examples that need a
trained model, an MLflow store or the real data are written as plain code blocks instead."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

import classifier

ROOT = Path(__file__).resolve().parents[1]
COVERED_ELSEWHERE = ("classifier.layers", "classifier.models.transformer")
MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(classifier.__path__, "classifier.")
    if not info.name.startswith(COVERED_ELSEWHERE) and info.name != "classifier.__main__"
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # examples name configs/... relative to the project
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(module, globs={**vars(module), "tmp": tmp_path}):
        runner.run(test)
    results = runner.summarize(verbose=False)
    assert results.failed == 0, f"{name}: {results.failed} of {results.attempted} examples failed"

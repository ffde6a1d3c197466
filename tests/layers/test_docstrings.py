"""The ``>>>`` examples in the docstrings of the layers and the Transformer run and are true."""

import doctest
import importlib
import inspect
import pkgutil

import pytest

import classifier.layers

# Every module of classifier.layers (a new one included), and the encoder-decoder model.
MODULES = [
    f"classifier.layers.{info.name}" for info in pkgutil.iter_modules(classifier.layers.__path__)
] + ["classifier.models.transformer"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(
        module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False
    )
    assert result.attempted > 0, f"{name} has no docstring examples"
    # Every ">>>" line of the module is an example that doctest found and ran.
    assert result.attempted == inspect.getsource(module).count(">>>"), result
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"

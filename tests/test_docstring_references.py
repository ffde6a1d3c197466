"""Every Sphinx-style reference to the package in its docstrings and comments
(``:mod:`classifier.data.files```, ``:func:`~classifier.data.files.scan```) names something that
exists: a module renamed or a function moved fails here, not in a reader's afternoon."""

from __future__ import annotations

import importlib
import re

from tests.conftest import ROOT

REFERENCE = re.compile(r":(?:mod|func|class|data|meth|attr|exc):`~?(classifier(?:\.\w+)+)`")


def resolves(dotted: str) -> bool:
    """Whether ``dotted`` is a module, or an attribute path inside one."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            fields = getattr(target, "__dataclass_fields__", {})  # a field without a default
            if not hasattr(target, name) and name not in fields:
                return False
            target = getattr(target, name, None)
        return True
    return False


def test_every_reference_in_the_package_resolves():
    dead = sorted(
        f"{path.relative_to(ROOT)}: {dotted}"
        for path in (ROOT / "classifier").rglob("*.py")
        for dotted in set(REFERENCE.findall(path.read_text(encoding="utf-8")))
        if not resolves(dotted)
    )
    assert dead == []

"""Labels that differ only in case (``Positive``, ``positive``): each is a class of its own, as
Keras' and scikit-learn's class names are, which a user rarely means. ``classify train``,
``classify data`` and ``classify evaluate`` print :func:`case_clash`'s note and go on. No
TensorFlow.

Example:
    >>> case_clash(["Positive", "negative", "positive"], "a.csv")
    "a.csv: labels 'Positive' and 'positive' differ only in case; they are two classes"
"""

from __future__ import annotations

from collections.abc import Iterable


def case_clash(labels: Iterable[str], where: str = "") -> str | None:
    """A one-line note naming the labels that differ only in case, else None; ``where`` names
    the source.

    Example:
        >>> case_clash(["negative", "positive"]) is None
        True
        >>> case_clash(["POS", "neg", "Pos", "Neg"])
        "labels 'POS' and 'Pos'; 'neg' and 'Neg' differ only in case; each is a class of its own"
    """
    spellings: dict[str, list[str]] = {}
    for label in dict.fromkeys(labels):
        spellings.setdefault(label.casefold(), []).append(label)
    groups = [names for names in spellings.values() if len(names) > 1]
    if not groups:
        return None
    shown = "; ".join(", ".join(map(repr, names[:-1])) + f" and {names[-1]!r}" for names in groups)
    two = len(groups) == 1 and len(groups[0]) == 2
    they = "they are two classes" if two else "each is a class of its own"
    prefix = f"{where}: " if where else ""
    return f"{prefix}labels {shown} differ only in case; {they}"

"""The Stanford Sentiment Treebank's trees as a labelled source: a ``.txt`` file of PTB
bracketed trees, one sentence a line, a label 0 to 4 on every node (0 very negative ...
4 very positive), as ``trainDevTestTrees_PTB`` holds them.

Its rows are the sentences (each tree's root: text and label), or with ``phrases`` every
labelled node of every tree, each distinct phrase once (its first label, in file order): the
phrase-level training of Socher et al. (2013), Kim (2014) and Iyyer et al. (2015). A phrase is
its leaves joined by spaces, the PTB escapes undone (``-LRB-`` is ``(``, ``\\/`` is ``/``), as
in the treebank's CSV export. The labels are the digits ``0`` to ``4``; ``data.label_map``
names them or maps them to two classes (:mod:`classifier.data.labelled`).

Bad input is one line naming the file and line: unbalanced parentheses, a node without a
label, a label outside 0-4, a file without trees.

Example:
    >>> tree = "(3 (2 Not) (1 (2 too) (1 -LRB-bad-RRB-)))"
    >>> list(tree_phrases(tree, "trees.txt", 1))[:2]
    [('Not too (bad)', '3'), ('Not', '2')]
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from classifier.data.sources import Source
from classifier.errors import DataError

SUFFIXES = {".txt": "treebank"}
LABELS = ("0", "1", "2", "3", "4")
ESCAPES = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}",
           "\\/": "/", "\\*": "*"}  # fmt: skip
_TOKENS = re.compile(r"\(|\)|[^\s()]+", re.ASCII)  # a no-break space stays in its word
_ESCAPED = re.compile("|".join(re.escape(escape) for escape in ESCAPES))
Row = tuple[str, str, str]  # text, label, where
Phrases = bool | Sequence[bool]  # none (the sentences), all, or those of the trees marked True


@dataclass(frozen=True, eq=False)  # phrases may be an array: compared and hashed by identity
class Treebank(Source):
    """A file of the treebank's trees (``format`` ``treebank``): its sentences, or with
    ``phrases`` its distinct labelled phrases (:func:`rows`)."""

    phrases: Phrases = False

    def rows(self, text_field: str, label_field: str) -> Iterator[Row]:
        del text_field, label_field  # a tree holds its text and labels
        return rows(Path(self.path), self.name, self.phrases)


def tree_phrases(line: str, name: str, number: int) -> Iterator[tuple[str, str]]:
    """``(phrase, label)`` of every node of one tree, the root first, then each node before
    the nodes inside it (pre-order). A DataError names ``name`` and line ``number``."""
    where = f"{name}: line {number}"
    stack: list[list] = []  # open nodes: [label, words, position in found]
    found: list[tuple[str, str] | None] = []
    expect_label = False
    for token in _TOKENS.findall(line):
        if token == "(":
            if expect_label:
                raise DataError(f"{where}: a node without a label")
            if not stack and found:
                raise DataError(f"{where}: more than one tree on the line")
            stack.append(["", [], len(found)])
            found.append(None)
            expect_label = True
        elif token == ")":
            if not stack or expect_label:
                raise DataError(f"{where}: unbalanced parentheses (a ')' closes nothing)")
            label, words, position = stack.pop()
            text = " ".join(words)
            found[position] = (_ESCAPED.sub(lambda match: ESCAPES[match[0]], text), label)
            if stack:
                stack[-1][1].extend(words)
        elif expect_label:
            if token not in LABELS:
                raise DataError(f"{where}: label {token!r} is outside 0-4")
            stack[-1][0], expect_label = token, False
        elif not stack:
            raise DataError(f"{where}: {token!r} outside any tree")
        else:
            stack[-1][1].append(token)
    if stack:
        raise DataError(f"{where}: unbalanced parentheses ({len(stack)} left open)")
    if not found:
        raise DataError(f"{where}: no tree")
    for phrase, label in found:
        if not phrase:
            raise DataError(f"{where}: a node with a label {label} and no words")
        yield phrase, label


def rows(path: Path, name: str, phrases: Phrases = False) -> Iterator[Row]:
    """``(text, label, "line N")`` of every tree's root, in file order; with ``phrases`` True,
    of every distinct labelled phrase instead (its first occurrence); with a bool per tree, of
    the distinct phrases of the trees where it is True. Blank lines are skipped."""
    seen: set[str] = set()
    trees = 0
    try:
        file = open(path, encoding="utf-8")  # noqa: SIM115 - closed by the with below
    except OSError as error:
        raise DataError(f"cannot read {name}: {error.strerror}") from None
    with file:
        try:
            for number, line in enumerate(file, 1):
                if line.isspace():
                    continue
                nodes = list(tree_phrases(line, name, number))  # the whole tree checked
                trees += 1
                if phrases is False:
                    yield *nodes[0], f"line {number}"
                elif phrases is True or phrases[trees - 1]:
                    for text, label in nodes:
                        if text not in seen:
                            seen.add(text)
                            yield text, label, f"line {number}"
        except UnicodeDecodeError as error:
            raise DataError(f"{name} is not UTF-8 (byte {error.start + 1} of a line)") from None
    if not trees:
        raise DataError(f"{name} is empty; a treebank file holds one PTB tree a line")

"""The behaviour suite: short sentences made from templates, each testing one capability of a
two-class sentiment classifier (the sentiment capabilities of CheckList, Ribeiro et al. 2020),
with gold labels ``negative`` and ``positive``:

- ``vocabulary``: plain sentiment words (adjectives, verbs, nouns) about a film or a part of it;
- ``negated_positive``: "The plot was not good." (all negative);
- ``negated_negative``: "The ending was not dull at all." (all positive);
- ``negation_neutral_middle``: "I don't think, given the time it took, that the film was good.";
- ``used_to_but_now``: "I used to think the film was awful, but now I think it is good.";
- ``contrast_but``: "The plot was dull, but overall the film was wonderful.": after "but" decides;
- ``intensifiers`` ("really very good") and ``diminishers`` ("somewhat good", "a bit dull");
- ``typos``: a ``vocabulary`` sentence whose sentiment word has two letters swapped, and
  ``names``: sentences naming people and places; both keep the label (invariance).

:func:`suite` makes one of two parts with words and templates of their own
(:mod:`classifier.evaluation.behaviour_parts`): ``dev``, which every two-class training run
scores, for choosing models, and ``test``, kept for reporting. A part is the same on every call
(seeded); ``data/behaviour/dev.csv`` and ``test.csv`` are its output, written by
``python -m classifier.evaluation.behaviour data/behaviour``. Each capability has
:data:`PER_CAPABILITY` sentences (200 in the dev part, which chooses, 100 in the test part),
half of each label, except the two negations, whose label is what they test. Accuracy per group
(:func:`accuracy_by_group`) is also ``classify evaluate --by``.

Example:
    >>> rows = suite("dev")
    >>> len(rows), rows[0].capability, rows[0].label
    (2000, 'vocabulary', 'negative')
    >>> [row.text for row in rows if row.capability == "negated_negative"][:2]
    ['The soundtrack was not dull at all.', 'This movie was never pretentious.']
"""

from __future__ import annotations

import csv
import functools
import hashlib
import random
import re
import sys
from collections.abc import Sequence
from itertools import product
from pathlib import Path
from string import Formatter
from typing import NamedTuple

from classifier.evaluation.behaviour_parts import PARTS

CAPABILITIES = (
    "vocabulary",
    "negated_positive",
    "negated_negative",
    "negation_neutral_middle",
    "used_to_but_now",
    "contrast_but",
    "intensifiers",
    "diminishers",
    "typos",
    "names",
)
LABELS = ("negative", "positive")
#: Sentences per capability in each part: the dev part, which chooses, is the larger.
PER_CAPABILITY = {"dev": 200, "test": 100}
COLUMNS = ("text", "label", "capability")
#: What a model's class names may be to be scored on the suite (any case).
CLASS_NAMES = {"negative": "negative", "neg": "negative", "positive": "positive", "pos": "positive"}
_POLARITY = {"negative": "neg", "positive": "pos"}
_OPPOSITE = {"neg": "pos", "pos": "neg"}
_AN = re.compile(r"\b([Aa]) (?=[aeiou])")


class Row(NamedTuple):
    """One sentence of the suite, its gold label and the capability it tests."""

    text: str
    label: str
    capability: str


def suite(part: str = "dev", per_capability: int | None = None) -> list[Row]:
    """The sentences of ``part`` (``dev`` or ``test``), capability by capability, labels in
    turn; no sentence twice. The same rows on every call (made once per process: 0.15 s, which
    every two-class training run paid twice)."""
    if part not in PARTS:
        raise ValueError(f"part must be one of {', '.join(PARTS)}, not {part!r}")
    return list(_suite(part, per_capability or PER_CAPABILITY[part]))


@functools.cache
def _suite(part: str, per_capability: int) -> tuple[Row, ...]:
    """:func:`suite`'s rows, made once per part and size."""
    words, templates = PARTS[part]["words"], PARTS[part]["templates"]
    seen: set[str] = set()
    rows = []
    for capability in CAPABILITIES:
        typos = capability == "typos"
        chosen = templates["vocabulary" if typos else capability]
        by_label = {
            label: [text for kind, text in chosen if kind in (label, "both")] for label in LABELS
        }
        by_label = {label: texts for label, texts in by_label.items() if texts}
        rng = random.Random(f"{part}/{capability}")
        count = per_capability // len(by_label)
        made = {
            label: _sentences(texts, label, words, count, seen, rng, typos)
            for label, texts in by_label.items()
        }
        for index in range(count):
            rows += [Row(made[label][index], label, capability) for label in made]
    return tuple(rows)


def suite_digest(part: str = "dev") -> str:
    """The first 12 hex digits of the SHA-256 of ``part``'s rows (text, label, capability):
    training runs tag the part they were scored on with it (``behaviour_suite``), so that runs
    scored on different sentences can be told apart.

    Example:
        >>> len(suite_digest("dev")), suite_digest("dev") != suite_digest("test")
        (12, True)
    """
    rows = "\n".join("\t".join(row) for row in suite(part))
    return hashlib.sha256(rows.encode("utf-8")).hexdigest()[:12]


def typo(phrase: str, rng: random.Random) -> str:
    """``phrase`` with two neighbouring letters of its longest word swapped, never the first
    letter: a typo that a reader reads through.

    Example:
        >>> typo("waste of time", random.Random(0))
        'watse of time'
    """
    words = phrase.split(" ")
    at = max(range(len(words)), key=lambda index: len(words[index]))
    word = words[at]
    spots = [
        i
        for i in range(1, len(word) - 1)
        if word[i] != word[i + 1] and word[i].isalpha() and word[i + 1].isalpha()
    ]
    if not spots:
        raise ValueError(f"no two neighbouring letters to swap in {phrase!r}")
    i = rng.choice(spots)
    words[at] = word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    return " ".join(words)


def accuracy_by_group(
    groups: Sequence[str], correct: Sequence[bool]
) -> list[tuple[str, int, float]]:
    """``(group, count, accuracy)`` of each group, in order of first appearance.

    Example:
        >>> accuracy_by_group(["b", "a", "b"], [True, False, False])
        [('b', 2, 0.5), ('a', 1, 0.0)]
    """
    totals: dict[str, list[int]] = {}
    for group, right in zip(groups, correct, strict=True):
        total = totals.setdefault(group, [0, 0])
        total[0] += 1
        total[1] += bool(right)
    return [(group, count, right / count) for group, (count, right) in totals.items()]


def suite_classes(class_names: Sequence[str]) -> dict[str, int] | None:
    """The class ids of ``negative`` and ``positive`` among a model's class names
    (:data:`CLASS_NAMES`: ``negative``/``positive`` or ``neg``/``pos``, in any case); None where
    the model has other classes or more than two, which the suite does not score.

    Example:
        >>> suite_classes(["Neg", "Pos"]), suite_classes(["bad", "good"])
        ({'negative': 0, 'positive': 1}, None)
    """
    found = {CLASS_NAMES.get(name.strip().lower()): i for i, name in enumerate(class_names)}
    if len(class_names) != 2 or set(found) != set(LABELS):
        return None
    return found


def behaviour_metrics(rows: Sequence[Row], predicted: Sequence[str]) -> dict[str, float]:
    """The accuracy of the labels ``predicted`` for ``rows`` per capability,
    ``behaviour_<capability>``, and the mean of those, ``behaviour_overall``.

    Example:
        >>> rows = [Row("a", "positive", "names"), Row("b", "negative", "typos")]
        >>> behaviour_metrics(rows, ["positive", "positive"])
        {'behaviour_names': 1.0, 'behaviour_typos': 0.0, 'behaviour_overall': 0.5}
    """
    correct = [label == row.label for row, label in zip(rows, predicted, strict=True)]
    table = accuracy_by_group([row.capability for row in rows], correct)
    metrics = {f"behaviour_{group}": accuracy for group, _, accuracy in table}
    metrics["behaviour_overall"] = sum(metrics.values()) / len(metrics)
    return metrics


def write_suite(folder: Path) -> list[Path]:
    """Write each part as ``folder/PART.csv`` (columns :data:`COLUMNS`); the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for part in PARTS:
        path = folder / f"{part}.csv"
        with path.open("w", newline="", encoding="utf-8") as file:
            writer = csv.writer(file, lineterminator="\n")
            writer.writerow(COLUMNS)
            writer.writerows(suite(part))
        written.append(path)
    return written


def _sentences(
    templates: Sequence[str],
    label: str,
    words: dict[str, tuple[str, ...]],
    count: int,
    seen: set[str],
    rng: random.Random,
    typos: bool,
) -> list[str]:
    """``count`` new sentences of ``label``, taken from the templates in turn, each template's
    fillings in a shuffled order."""
    streams = [iter(_filled(template, label, words, rng, typos)) for template in templates]
    made: list[str] = []
    while streams and len(made) < count:
        for stream in list(streams):
            text = next((text for text in stream if text not in seen), None)
            if text is None:
                streams.remove(stream)
                continue
            seen.add(text)
            made.append(text)
            if len(made) == count:
                break
    if len(made) < count:
        raise ValueError(f"the templates make {len(made)} {label} sentences, not {count}")
    return made


def _filled(
    template: str, label: str, words: dict[str, tuple[str, ...]], rng: random.Random, typos: bool
) -> list[str]:
    """Every sentence ``template`` makes for ``label`` (a slot's words never twice in one
    sentence), shuffled; with ``typos``, its sentiment word misspelt (:func:`typo`)."""
    fields = [name for _, name, _, _ in Formatter().parse(template) if name]
    slots = [_slot(field, label) for field in fields]
    combos = [
        combo
        for combo in product(*(words[slot] for slot in slots))
        if len(set(zip(slots, combo, strict=True))) == len(combo)
    ]
    rng.shuffle(combos)
    sentences = []
    for combo in combos:
        values = dict(zip(fields, combo, strict=True))
        if typos:
            sentiment = next(field for field in fields if field.startswith("s_"))
            values[sentiment] = typo(values[sentiment], rng)
        sentences.append(_AN.sub(r"\1n ", template.format(**values)))
    return sentences


def _slot(field: str, label: str) -> str:
    """The word list a template's field takes: ``s_adj`` is ``adj_pos`` in a positive sentence,
    ``o_adj`` ``adj_neg``; ``aspect_2`` is ``aspect``."""
    base, polarity = re.sub(r"_\d+$", "", field), _POLARITY[label]
    if base.startswith("s_"):
        return f"{base[2:]}_{polarity}"
    if base.startswith("o_"):
        return f"{base[2:]}_{_OPPOSITE[polarity]}"
    return base


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m classifier.evaluation.behaviour [FOLDER]``: write the parts' CSV files
    (default ``data/behaviour``)."""
    args = sys.argv[1:] if argv is None else list(argv)
    for path in write_suite(Path(args[0] if args else "data/behaviour")):
        print(path)


if __name__ == "__main__":
    main()

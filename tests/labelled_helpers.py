"""Tiny labelled data sets of three classes that the tests write: CSV files a user would bring."""

from __future__ import annotations

import csv
import random
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

#: Words that mark each class; the rest of a text is neutral filler.
CLASS_WORDS = {
    "bad": ["awful", "dull", "boring", "terrible", "weak"],
    "okay": ["fine", "average", "decent", "mixed", "plain"],
    "good": ["great", "superb", "moving", "brilliant", "lovely"],
}
FILLER = ["the", "film", "plot", "actor", "scene", "story", "music", "it", "was", "and"]


def labelled_rows(count: int, seed: int = 0) -> list[tuple[str, str]]:
    """``count`` (text, label) rows, classes in turn, each text 5 to 20 filler words and two
    words of its class."""
    rng = random.Random(seed)
    rows = []
    for index in range(count):
        label = list(CLASS_WORDS)[index % len(CLASS_WORDS)]
        words = [rng.choice(FILLER) for _ in range(rng.randint(5, 20))]
        words += [rng.choice(CLASS_WORDS[label]) for _ in range(2)]
        rng.shuffle(words)
        rows.append((" ".join(words), label))
    return rows


def write_csv(path: Path, rows: list[tuple[str, str]], header=("text", "label")) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def labelled_overrides(batch_size: int = 16) -> list[str]:
    """Config overrides sized to the tiny data sets."""
    return [
        "data.vocab_size=64",
        "data.sequence_length=24",
        f"data.batch_size={batch_size}",
        "model.ngram_buckets=1024",
        "model.embed_dim=8",
        "model.ff_dim=16",
    ]


def classify(*args: str) -> subprocess.CompletedProcess:
    """``classify ARGS`` in a new process from the checkout: its exit code and output."""
    return subprocess.run(
        [sys.executable, "-m", "classifier", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )

"""When should ``classify predict`` answer ``unknown``? The rule by evidence against the rule by
counts, on the validation reviews cut to their first sentence (issue #43).

The model is the registered ``imdb-sentiment`` (its LiteRT bundle, as ``classify predict`` uses
it). The validation reviews are those ``make train`` chose its epoch on (TFDS
``train[15000:25000]``); each is cut to its first sentence (up to the first ``.``, ``!`` or
``?`` followed by a space or ``<br``), which leaves many short texts of few known words, as a
user's one-line reviews are. For each rule: the share left ``unknown`` and the accuracy of the
answered ones. The counts rule is the one before (at least 2 known words, and at least half of
the words known); the evidence rule is :mod:`classifier.serving.evidence` at several
thresholds, its default marked.

Usage:
    TFDS_DATA_DIR=../shared/tensorflow_datasets python experiments/unknown_rule.py [--model URI]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

THRESHOLDS = (0.25, 0.5, 1.0, 2.0, 4.0)
_SENTENCE_END = re.compile(r"[.!?](?=\s|<br)")


def first_sentence(text: str) -> str:
    """The text up to and with its first sentence end (all of it where there is none).

    Example:
        >>> first_sentence("Great film! I loved it.")
        'Great film!'
    """
    match = _SENTENCE_END.search(text)
    return text[: match.end()] if match else text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None, help="a model URI (default: imdb-sentiment)")
    args = parser.parse_args()
    from classifier.cli.startup import import_tensorflow

    import_tensorflow()
    import tensorflow_datasets as tfds

    from classifier.serving import evidence
    from classifier.serving.litert_engine import load_bundle
    from classifier.serving.model_source import find_bundle
    from classifier.serving.predict import predict_probabilities, tokenizer_of, word_counts

    bundle = load_bundle(find_bundle(args.model))

    def predict(batch: list[str]):
        return predict_probabilities(bundle, batch)

    data = tfds.load(
        "imdb_reviews",
        split="train[15000:25000]",
        as_supervised=True,
        data_dir=os.environ.get("TFDS_DATA_DIR"),
    )
    texts, truth = [], []
    for text, label in tfds.as_numpy(data):
        texts.append(first_sentence(text.decode("utf-8")))
        truth.append(int(label))
    truth = np.array(truth)
    probabilities = predict_probabilities(bundle, texts)
    predicted = (probabilities[:, 1] >= 0.5).astype(int)
    known, words = word_counts(bundle, texts)
    rules = {"counts (before: >= 2 known, >= half known)": (known < 2) | (known < 0.5 * words)}
    default = evidence.MIN_EVIDENCE
    for threshold in THRESHOLDS:
        evidence.MIN_EVIDENCE = threshold
        mark = " (the default)" if threshold == default else ""
        rules[f"evidence: under {threshold} nats{mark}"] = evidence.unknown(
            texts, probabilities, known, predict, tokenizer_of(bundle)
        )
    evidence.MIN_EVIDENCE = default
    print(
        f"{len(texts):,} validation reviews cut to their first sentence: median "
        f"{int(np.median(words))} words, {np.mean(known < evidence.EVIDENCE_WORDS):.1%} with fewer "
        f"than {evidence.EVIDENCE_WORDS} known words; accuracy answering all: "
        f"{np.mean(predicted == truth):.4f}"
    )
    print()
    print("| rule | unknown | accuracy of the answered | accuracy of the unknown ones |")
    print("|---|---:|---:|---:|")
    for name, unknown in rules.items():
        answered = ~unknown
        left = f"{np.mean(predicted[unknown] == truth[unknown]):.4f}" if unknown.any() else "-"
        print(
            f"| {name} | {unknown.mean():.2%} | "
            f"{np.mean(predicted[answered] == truth[answered]):.4f} | {left} |"
        )
    examples = [
        "Brilliant!",
        "Awful.",
        "Horrible!",
        "Excellent bluetooth headset.",
        "the",
        "xqzv blorf",
    ]
    probabilities = predict_probabilities(bundle, examples)
    known, _ = word_counts(bundle, examples)
    verdict = evidence.unknown(examples, probabilities, known, predict, tokenizer_of(bundle))
    print()
    for text, row, unknown in zip(examples, probabilities, verdict, strict=True):
        print(f"- `{text}`: P(positive) {row[1]:.3f}, {'unknown' if unknown else 'answered'}")


if __name__ == "__main__":
    main()

"""What a bag of n-grams needs to read negation: a probe with scikit-learn, not the product.

A linear model on NB-weighted binary word 1-2-grams (NBSVM, as ``nbow``; n-grams seen in at
least 2 training reviews, logistic regression C=30) trained on IMDB's first 15,000 training
reviews, scored on the next 10,000 (validation), on SST-2's 872 dev sentences and on the
behaviour suite's dev part (data/behaviour/dev.csv, the part for choosing). (Its first tables,
in docs/results.md, trained on all 25,000 and scored the test split.) Each MODE changes only
the features:

- ``plain``: the n-grams as they are (the shipped model's kind);
- ``mark``: an n-gram whose last word is in a negation's scope is a feature of its own
  (``N:bad``; Das & Chen 2001, Pang et al. 2002);
- ``flip``: such an n-gram counts as minus ``g`` times the plain n-gram (its weight flipped:
  "not bad" reads as the opposite of "bad"), plus its own ``N:`` feature for what differs.
  Options: ``g=0.5`` (flip by half), ``c=0.25`` (the words of a sentence before a contrast word,
  "but", "however", "yet", ..., count a quarter), ``w=6`` (scope: six words, punctuation not
  seen, as the product's token ids have none; by default a scope runs from the negation, "not",
  "never", "n't", ..., to the sentence's end or a contrast word), ``sst=1`` (SST-2's phrases, every
  non-neutral phrase of the treebank's training trees, added to the training reviews),
  ``comma=1`` (a comma ends a scope too), ``n=4`` (and a scope holds at most four words),
  ``opt=adam`` (trained as ``nbow`` is, Adam in batches, ``e=10`` epochs, in place of
  logistic regression to convergence; ``opt=sgd``: SGD, ``lr=`` its rate), ``C=30`` (logistic regression's inverse penalty).

Run (about 2 minutes a mode on 2 cores, after 30 s of loading)::

    TFDS_DATA_DIR=../shared/tensorflow_datasets python experiments/negation_scope.py \\
        plain mark flip flip:g=0.5 flip:c=0.25 flip:w=6 flip:w=6:c=0.25

Results (2026-11-27, AMD EPYC, 2 cores shared with a sweep): docs/results.md, "Negation".
"""

from __future__ import annotations

import csv
import os
import re
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import tensorflow_datasets as tfds
from sklearn.linear_model import LogisticRegression

from classifier.data import treebank

SUITE = Path(__file__).resolve().parents[1] / "data" / "behaviour" / "dev.csv"
TREES = Path(__file__).resolve().parents[2] / "shared" / "data" / "sst5" / "trees" / "train.txt"
NEGATIONS = {"not", "no", "never", "nothing", "nobody", "none", "neither", "nor", "hardly",
             "without", "cannot"}  # fmt: skip
CONTRASTS = {"but", "however", "although", "though", "yet", "whereas", "except"}
ENDS, PUNCTUATION = {".", "!", "?", ";", ":"}, {",", ".", "!", "?", ";", ":"}
#: Words that open a conceded clause at a sentence's start; with ``CONCESSIVE`` its words count
#: as those before a contrast word do (``concessive=1`` in one_bag.py).
CONCESSIONS, CONCESSIVE = {"although", "though", "while", "whilst"}, False
#: Function words; with ``CONTENT_SCOPE`` a negation's scope passes over them without negating
#: them ("not silly at all": "at" and "all" keep their own features; ``content_scope=1`` in
#: one_bag.py).
FUNCTION_WORDS = {"a", "an", "the", "at", "all", "in", "any", "way", "of", "to", "for", "on",
                  "with", "by", "as", "it", "its", "this", "that", "these", "those", "i", "you",
                  "he", "she", "we", "they", "is", "was", "are", "were", "be", "been", "am",
                  "and", "or", "so", "do", "did", "does", "have", "has", "had", "find", "found",
                  "think", "thought", "say", "said", "really", "one", "part"}  # fmt: skip
#: ``content_scope=2``: only articles and prepositions (and "all", "any", "way").
ARTICLES_PREPOSITIONS = {"a", "an", "the", "at", "all", "in", "any", "way", "of", "to", "for",
                         "on", "with", "by", "as"}  # fmt: skip
CONTENT_SCOPE = False
TOKEN = re.compile(r"[a-z0-9']+|[.,;:!?]")
#: The features that read negation best here, as ``features`` takes them (mode, flip, window,
#: contrast, a comma ends a scope, most words in a scope): ``flip:c=0.25:comma=1:n=4``.
SCOPED = ("flip", 1.0, None, 0.25, True, 4)


def words(
    text: str, window: int | None, contrast: float, comma: bool = False, most: int = 0
) -> list[tuple[str, bool, bool]]:
    """``(word, in a negation's scope, before a contrast word in its sentence)`` per word."""
    out: list[tuple[str, bool, bool]] = []
    scope, since, sentence, conceding = False, 0, 0, False
    for token in TOKEN.findall(text.lower().replace("<br />", " . ")):
        if token in ENDS - {";", ":"}:
            sentence = len(out)
        if token in ENDS or token == ",":
            conceding = False  # a concession ends with its clause
        if CONCESSIVE and token in CONCESSIONS and len(out) == sentence and contrast != 1.0:
            conceding = True  # "Although A, B": A is conceded, B decides
        if (token in ENDS and not window) or token in CONTRASTS or (comma and token == ","):
            scope = False
            if token in CONTRASTS:
                if contrast != 1.0:
                    out[sentence:] = [(word, negated, True) for word, negated, _ in out[sentence:]]
                out.append((token, False, False))
            continue
        if token in PUNCTUATION:
            continue
        if token in NEGATIONS or token.endswith("n't"):
            out.append((token, False, False))
            scope, since = True, 0
            continue
        since += 1
        scope = scope and not (window and since > window) and not (most and since > most)
        out.append((token, scope and not (CONTENT_SCOPE and token in FUNCTION_WORDS), conceding))
    return out


def features(texts, mode, gamma, window, contrast, comma, most=0, vocabulary=None):
    """Signed, weighted n-gram features (texts x vocabulary) and the vocabulary."""
    build, vocabulary = vocabulary is None, {} if vocabulary is None else vocabulary
    entries: list[tuple[int, int, float]] = []
    for row, text in enumerate(texts):
        if mode == "plain":
            sequence = [
                (t, False, False) for t in TOKEN.findall(text.lower()) if t not in PUNCTUATION
            ]
        else:
            sequence = words(text, window, contrast, comma, most)
        plus: dict[str, float] = {}  # each n-gram's largest weight, and a flipped one's
        minus: dict[str, float] = {}
        for i in range(len(sequence)):
            for n in (1, 2):
                part = sequence[i : i + n]
                if len(part) < n:
                    continue
                gram, negated, before = " ".join(p[0] for p in part), part[-1][1], part[-1][2]
                scale = contrast if before else 1.0
                if negated and mode in ("flip", "pure"):
                    minus[gram] = max(minus.get(gram, 0.0), gamma * scale)
                if negated and mode == "pure":  # the flip alone, no feature of its own
                    continue
                if negated and mode in ("mark", "flip"):
                    gram = "N:" + gram
                plus[gram] = max(plus.get(gram, 0.0), scale)
        values = {gram: plus.get(gram, 0.0) - minus.get(gram, 0.0) for gram in {*plus, *minus}}
        for gram, value in values.items():
            if build:
                vocabulary.setdefault(gram, len(vocabulary))
            if gram in vocabulary:
                entries.append((row, vocabulary[gram], value))
    rows, cols, vals = zip(*entries, strict=True) if entries else ((), (), ())
    return sp.csr_matrix((vals, (rows, cols)), shape=(len(texts), len(vocabulary))), vocabulary


#: The fewest training texts an n-gram must be seen in to be a feature.
MIN_TEXTS = 2


def nb_features(texts, labels, settings):
    """The training texts' features (n-grams seen in at least :data:`MIN_TEXTS` of them), their
    vocabulary and NB log-count ratios: ``(matrix, vocabulary, ratios)``."""
    matrix, vocabulary = features(texts, *settings)
    kept = np.flatnonzero(np.asarray((abs(matrix) > 0).sum(0)).ravel() >= MIN_TEXTS)
    renumber = {old: new for new, old in enumerate(kept)}
    vocabulary = {g: renumber[i] for g, i in vocabulary.items() if i in renumber}
    matrix = matrix[:, kept]
    p = 1 + np.asarray(abs(matrix[labels == 1]).sum(0)).ravel()
    q = 1 + np.asarray(abs(matrix[labels == 0]).sum(0)).ravel()
    return matrix, vocabulary, np.log((p / p.sum()) / (q / q.sum()))


def nb_scaled(matrix, ratios):
    """Features times their ratios, each row L2-normalised (NBSVM's input)."""
    m = matrix @ sp.diags(ratios)
    return sp.diags(1 / (np.sqrt(np.asarray(m.multiply(m).sum(1)).ravel()) + 1e-9)) @ m


def batched_model(solver: str, epochs: int, rate: float):
    """Logistic regression trained as ``nbow`` is (``adam``: Adam at ``rate`` 0.03) or by SGD
    with Nesterov momentum 0.9 (``sgd``), in batches of 1,024 for ``epochs`` epochs, with the L2
    penalty of C=30 on 15,000 reviews (1.1e-6 x the squared weights per review's loss;
    scikit-learn's ``alpha`` is that x 2 x the batch size)."""
    from sklearn.neural_network import MLPClassifier

    return MLPClassifier(
        hidden_layer_sizes=(),  # no hidden layer: a linear model with a logistic output
        solver=solver,
        learning_rate_init=rate,
        momentum=0.9,
        batch_size=1024,
        alpha=2 * 1024 / (2 * 30 * 15_000),
        max_iter=epochs,
        shuffle=True,
        random_state=42,
        tol=0.0,
        n_iter_no_change=10_000,
    )


def load(split: str):
    data_dir = os.environ.get("TFDS_DATA_DIR")
    dataset = tfds.load("imdb_reviews", split=split, data_dir=data_dir, as_supervised=True)
    pairs = [(text.decode(), int(label)) for text, label in tfds.as_numpy(dataset)]
    return [text for text, _ in pairs], np.array([label for _, label in pairs])


def scored_sets(part: str = "dev"):
    """What every probe here scores, each ``(texts, 0/1 labels)``: IMDB's reviews 15,000 on
    (``imdb-val``), SST-2's dev sentences (``sst2-dev``) and the behaviour suite's ``part``
    (``suite``); and the suite's rows (their capabilities)."""
    rows = list(csv.DictReader(SUITE.with_name(f"{part}.csv").open()))
    dev = [
        (text, int(label))
        for text, label, _ in treebank.rows(TREES.with_name("dev.txt"), "dev.txt")
        if label != "2"
    ]
    sets = {
        "imdb-val": load("train[15000:]"),
        "sst2-dev": ([t for t, _ in dev], np.array([int(y > 2) for _, y in dev])),
        "suite": (
            [row["text"] for row in rows],
            np.array([row["label"] == "positive" for row in rows], dtype=int),
        ),
    }
    return sets, rows


def by_capability(rows, right) -> dict[str, float]:
    """The share of the suite's ``rows`` answered ``right``, per capability, in file order."""
    groups: dict[str, list[bool]] = {}
    for row, ok in zip(rows, right, strict=True):
        groups.setdefault(row["capability"], []).append(bool(ok))
    return {name: float(np.mean(oks)) for name, oks in groups.items()}


def main(specs: list[str]) -> None:
    # Design choices are made on validation: the first 15,000 training reviews train, the next
    # 10,000 score ("imdb-val"); the tables of 2026-11-27 before "n=" scored the test split.
    train, train_labels = load("train[:15000]")
    sets, suite = scored_sets()
    (test, test_labels), (sst_texts, sst_labels) = sets["imdb-val"], sets["sst2-dev"]
    suite_texts, suite_labels = sets["suite"]
    for spec in specs:
        started = time.time()
        mode, *options = spec.split(":")
        option = dict(item.split("=") for item in options)
        gamma, contrast = float(option.get("g", 1)), float(option.get("c", 1))
        window = int(option["w"]) if "w" in option else None
        settings = (
            mode,
            gamma,
            window,
            contrast,
            bool(option.get("comma")),
            int(option.get("n", 0)),
        )
        texts, labels = train, train_labels
        if option.get("sst"):  # and SST-2's phrases: every non-neutral phrase of train.txt
            phrases = [(t, int(x)) for t, x, _ in treebank.rows(TREES, "train.txt", True)]
            texts = texts + [t for t, x in phrases if x != 2]
            labels = np.concatenate([labels, [int(x > 2) for _, x in phrases if x != 2]])
        matrix, vocabulary, ratios = nb_features(texts, labels, settings)

        def scaled(m, ratios=ratios):
            return nb_scaled(m, ratios)

        if option.get("opt") in ("adam", "sgd"):  # nbow's way of training, or plain SGD
            rate = float(option.get("lr", 0.03))
            model = batched_model(option["opt"], int(option.get("e", 10)), rate)
            model.fit(scaled(matrix), labels)
        else:
            cost = float(option.get("C", 30))
            model = LogisticRegression(C=cost, max_iter=2000).fit(scaled(matrix), labels)
        accuracy = model.score(
            scaled(features(test, *settings, vocabulary=vocabulary)[0]), test_labels
        )
        sst = model.score(
            scaled(features(sst_texts, *settings, vocabulary=vocabulary)[0]), sst_labels
        )
        right = (
            model.predict(scaled(features(suite_texts, *settings, vocabulary=vocabulary)[0]))
            == suite_labels
        )
        shown = " ".join(
            f"{name}={share:.2f}" for name, share in by_capability(suite, right).items()
        )
        print(f"{spec:18s} imdb-val {accuracy:.4f} sst2-dev {sst:.4f} suite {right.mean():.3f} {shown} "
              f"({time.time() - started:.0f} s)", flush=True)  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:] or ["plain", "flip:c=0.25"])

"""A review reader and a sentence reader, chosen by length: a probe with scikit-learn.

The negation probe (``negation_scope.py``; docs/results.md, "The optimiser is the difference")
found two linear bags on the same features (a full flip within four words to the clause's end,
contrast 0.25) that each win where the other loses: trained as ``nbow`` is (Adam, 10 epochs) on
IMDB's first 15,000 training reviews, the best on IMDB's reviews and SST-2's sentences but few
negated negatives; fitted to convergence with the treebank's non-neutral phrases added, nearly
every negated negative but 1.5 points less of IMDB. Users type sentences; IMDB's reviews are
long. This probe mixes the two models' log-odds by the input's length in words,
``w * sentence + (1 - w) * review`` with ``w = 1`` up to ``short`` words, 0 from ``long`` words
on, linear between, and scores the mix on IMDB's next 10,000 training reviews (validation),
SST-2's 872 dev sentences and the behaviour suite's dev part, for several (short, long) pairs:
all three are parts for choosing, none is a test split.

Run (2 to 4 minutes each on 2 cores)::

    TFDS_DATA_DIR=../shared/tensorflow_datasets python experiments/length_fusion.py
    TFDS_DATA_DIR=../shared/tensorflow_datasets python experiments/length_fusion.py scope=sentence
    # the suite's test part instead of its dev part (to report what was chosen, once):
    TFDS_DATA_DIR=../shared/tensorflow_datasets python experiments/length_fusion.py scope=sentence part=test
    # the sentence reader with each word's letter 3-5-grams, signed as the word, weighed 2:
    TFDS_DATA_DIR=../shared/tensorflow_datasets python experiments/length_fusion.py scope=sentence chars=2
    # the sentence reader trained on the treebank's phrases alone, without IMDB's reviews:
    TFDS_DATA_DIR=../shared/tensorflow_datasets python experiments/length_fusion.py scope=sentence chars=2 reviews=0
    # the sentence reader fitted as nbow is (Adam in batches of 1,024) at 0.03 for 10 epochs:
    TFDS_DATA_DIR=../shared/tensorflow_datasets python experiments/length_fusion.py scope=sentence chars=2 adam=0.03 epochs=10
    # the choice, on the suite's test part once:
    TFDS_DATA_DIR=../shared/tensorflow_datasets python experiments/length_fusion.py scope=sentence chars=2 adam=0.01 epochs=30 part=test

Results (2026-11-28, AMD EPYC, 2 cores): docs/results.md, "A sentence reader for short inputs".
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))  # negation_scope.py, beside this file
import negation_scope as probe  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402

from classifier.data import treebank  # noqa: E402

#: The probe's best features for negation: a full flip within four words, a comma ends a
#: scope, a quarter weight before a contrast word (``flip:c=0.25:comma=1:n=4``).
SETTINGS = probe.SCOPED
#: The sentence reader's scope with ``scope=sentence`` on the command line: from the negation to
#: the sentence's end or a contrast word, commas not ending it (``flip:c=0.25``).
SENTENCE_SCOPE = ("flip", 1.0, None, 0.25, False, 0)
#: (short, long): the mix is all sentence reader up to ``short`` words, all review reader from
#: ``long`` words on.
GATES = [(0, 1), (20, 40), (30, 60), (50, 100), (100, 200), (10_000, 10_001)]


def log_odds(model, scaled) -> np.ndarray:
    """The model's log-odds of positive (``MLPClassifier`` gives only probabilities)."""
    if hasattr(model, "decision_function"):
        return model.decision_function(scaled)
    p = np.clip(model.predict_proba(scaled)[:, 1], 1e-12, 1 - 1e-12)
    return np.log(p / (1 - p))


def signed_letters(
    texts, settings, vocabulary: dict[str, int], build: bool, known=None, repeats: str = "sum"
):
    """Each word's letter 3-5-grams (``<word>`` with its edges, as fastText), signed as the word
    is read: minus within a negation's scope, times the contrast weight before "but"; not
    normalised. A gram a text holds more than once: its signs summed (``repeats="sum"``) or
    the largest (``"max"``, as ``one_bag.py`` reads it). ``known``: the words that have
    letters (``letters=N``; None: all)."""
    _, gamma, window, contrast, comma, most = settings
    rows, cols, vals = [], [], []
    for row, text in enumerate(texts):
        seen: dict[int, float] = {}
        for word, negated, before in probe.words(text, window, contrast, comma, most):
            if known is not None and word not in known:
                continue  # letters=N: an out-of-vocabulary word has no letters, as a token id
            sign = (-gamma if negated else 1.0) * (contrast if before else 1.0)
            edged = f"<{word}>"
            for n in (3, 4, 5):
                for i in range(len(edged) - n + 1):
                    gram = edged[i : i + n]
                    if build:
                        vocabulary.setdefault(gram, len(vocabulary))
                    if gram not in vocabulary:
                        continue
                    col = vocabulary[gram]
                    if repeats == "max":
                        seen[col] = max(seen.get(col, -9.0), sign)
                    else:
                        seen[col] = seen.get(col, 0.0) + sign
        for col, value in seen.items():
            rows.append(row), cols.append(col), vals.append(value)
    return sp.csr_matrix((vals, (rows, cols)), shape=(len(texts), len(vocabulary)))


def letter_features(texts, settings, vocabulary: dict[str, int], build: bool, known=None):
    """:func:`signed_letters`, each row L2-normalised. ``chars=W`` weighs them ``W`` beside the
    word n-grams, in the sentence reader only: a typo keeps most of a word's letter n-grams
    ("terible", "terrible")."""
    matrix = signed_letters(texts, settings, vocabulary, build, known)
    norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(1)).ravel()) + 1e-9
    return sp.diags(1 / norms) @ matrix


def main() -> None:
    started = time.time()
    train, train_labels = probe.load("train[:15000]")
    option = dict(arg.split("=", 1) for arg in sys.argv[1:])
    # part=test: the suite's test part instead of its dev part, to report a choice, once
    sets, suite = probe.scored_sets(option.get("part", "dev"))
    phrases = [(t, int(x)) for t, x, _ in treebank.rows(probe.TREES, "train.txt", True)]
    phrases = [(t, x) for t, x in phrases if x != 2]

    def fitted(texts, labels, model, settings=SETTINGS, chars=0.0):
        matrix, vocabulary, ratios = probe.nb_features(texts, labels, settings)
        letters: dict[str, int] = {}
        known = None
        if "letters" in option:  # letters=N: letter n-grams of the N commonest words only
            counts = Counter(w for t in texts for w in probe.TOKEN.findall(t.lower()))
            known = {w for w, _ in counts.most_common(int(option["letters"]))}

        def inputs_of(m, texts, fit=False):
            scaled = probe.nb_scaled(m, ratios)
            if not chars:
                return scaled
            grams = letter_features(texts, settings, letters, fit, known)
            return sp.hstack([scaled, chars * grams]).tocsr()

        model.fit(inputs_of(matrix, texts, fit=True), labels)

        def score(inputs):
            m = probe.features(inputs, *settings, vocabulary=vocabulary)[0]
            return log_odds(model, inputs_of(m, inputs))

        return score

    review = fitted(train, train_labels, probe.batched_model("adam", 10, 0.03))
    reviews = int(option.get("reviews", len(train)))  # reviews=0: the phrases alone
    sentence = fitted(
        train[:reviews] + [t for t, _ in phrases],
        np.concatenate([train_labels[:reviews], [int(x > 2) for _, x in phrases]]),
        (
            probe.batched_model("adam", int(option.get("epochs", 10)), float(option["adam"]))
            if "adam" in option  # adam=RATE: trained as nbow is, for epochs=N epochs
            else LogisticRegression(C=30, max_iter=2000)
        ),
        SENTENCE_SCOPE if "scope=sentence" in sys.argv[1:] else SETTINGS,
        float(option.get("chars", 0)),
    )
    scores = {name: (review(texts), sentence(texts)) for name, (texts, _) in sets.items()}
    lengths = {
        name: np.array([len(probe.TOKEN.findall(t.lower())) for t in texts])
        for name, (texts, _) in sets.items()
    }
    for name, values in lengths.items():
        print(f"{name}: words per text, median {np.median(values):.0f}, "
              f"10th percentile {np.percentile(values, 10):.0f}, min {values.min()}")  # fmt: skip
    capabilities = dict.fromkeys(row["capability"] for row in suite)  # in file order
    print(
        "| short, long (words) | IMDB val | SST-2 dev | suite | " + " | ".join(capabilities) + " |"
    )
    for short, long in GATES:
        row = []
        for name, (_, labels) in sets.items():
            weight = np.clip((long - lengths[name]) / (long - short), 0.0, 1.0)
            mixed = weight * scores[name][1] + (1 - weight) * scores[name][0]
            right = (mixed > 0).astype(int) == labels
            row.append(f"{right.mean():.4f}")
            if name == "suite":
                row += [f"{share:.2f}" for share in probe.by_capability(suite, right).values()]
        label = {(0, 1): "review reader alone", (10_000, 10_001): "sentence reader alone"}
        print(f"| {label.get((short, long), f'{short}, {long}')} | " + " | ".join(row) + " |")
    print(f"({time.time() - started:.0f} s)")


if __name__ == "__main__":
    main()

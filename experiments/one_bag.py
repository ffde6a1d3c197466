"""The length mix of ``length_fusion.py`` as one bag: a probe of the product's design.

``length_fusion.py`` trains two bags apart and mixes their log-odds by the input's length.
``nbow``'s machinery (features once per split, lazy Adam, the bundle, the explanations) knows
one linear bag. The same idea as one bag: each input's features are put in one of two blocks
by its length, a **sentence block** (fewer than ``short`` words: the scope to the sentence's
end, and optionally each word's letter 3-5-grams signed as the word) and a **review block**
(the clause scope of four words), each block's NB log-count ratios counted on the rows that
have it, the whole row L2-normalised once, and one logistic regression trained by Adam on
IMDB's first 15,000 training reviews and the treebank's 77,616 non-neutral training phrases
together. ``design=sum``: every input has the sentence block, and inputs of ``short`` words or
more the review block as well (the review block a correction for long inputs);
``design=shared``: every input has the review block, and short ones the sentence block as well
(Daume's shared and per-domain copies). ``letters=W``: the letter n-grams' ratios times W (the
product's ``model.letter_weight``; 0: no letters). ``min_texts=N``: an n-gram is a feature
where N training texts hold it (2). ``sentence_mode=pure``: a negated n-gram of a sentence
counts minus itself alone, without a feature of its own (``N:``). ``concessive=1``: the clause
after a sentence-initial "although", "though" or "while" counts as words before "but" do.
``neutral=1``: the treebank's neutral phrases join training twice, once as negative and once
as positive (a logistic loss's target of one half, so that what they hold, "the soundtrack",
"my friend", leans neither way). ``content_scope=1``: a negation's scope passes over function
words ("at", "all", "the", "find", ...) without negating them; ``content_scope=2``: over
articles and prepositions only.

Scored as the other probes are (IMDB's next 10,000 training reviews, SST-2's dev sentences, the
suite's dev part; ``part=test`` for the test part, once).

Run (about 4 minutes on 2 cores)::

    TFDS_DATA_DIR=../shared/tensorflow_datasets python experiments/one_bag.py [short=30]
        [design=split|sum|shared] [letters=W] [adam=0.03] [epochs=10] [part=dev]
        [min_texts=2] [sentence_mode=flip|pure] [concessive=0|1] [content_scope=0|1|2]
        [neutral=0|1]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the other probes, beside this file
import length_fusion as fusion  # noqa: E402
import negation_scope as probe  # noqa: E402

from classifier.data import treebank  # noqa: E402


class Block:
    """One block's features: fitted on the training rows it holds, zero on other rows."""

    def __init__(self, texts, labels, held, settings, letters: float):
        self.settings, self.letters, self.grams = settings, letters, {}
        kept = [t for t, h in zip(texts, held, strict=True) if h]
        y = labels[held]
        words, self.vocabulary, ratios = probe.nb_features(kept, y, settings)
        parts = [words]
        if letters:
            grams = fusion.signed_letters(kept, settings, self.grams, True, repeats="max")
            p = 1 + np.asarray(abs(grams[y == 1]).sum(0)).ravel()
            q = 1 + np.asarray(abs(grams[y == 0]).sum(0)).ravel()
            ratios = np.concatenate([ratios, letters * np.log((p / p.sum()) / (q / q.sum()))])
            parts.append(grams)
        self.ratios = ratios
        self.train = self._spread(sp.hstack(parts).tocsr(), held)

    def _spread(self, matrix, held):
        """The held rows' features at their places among all rows."""
        where = np.flatnonzero(held)
        pick = sp.csr_matrix(
            (np.ones(len(where)), (where, np.arange(len(where)))), shape=(len(held), len(where))
        )
        return (pick @ matrix) @ sp.diags(self.ratios)

    def of(self, texts, held):
        kept = [t for t, h in zip(texts, held, strict=True) if h]
        parts = [probe.features(kept, *self.settings, vocabulary=self.vocabulary)[0]]
        if self.letters:
            parts.append(
                fusion.signed_letters(kept, self.settings, self.grams, False, repeats="max")
            )
        return self._spread(sp.hstack(parts).tocsr(), held)


def normalised(matrix):
    norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(1)).ravel()) + 1e-9
    return (sp.diags(1 / norms) @ matrix).tocsr()


def main() -> None:
    started = time.time()
    option = dict(arg.split("=", 1) for arg in sys.argv[1:])
    short, letters = int(option.get("short", 30)), float(option.get("letters", 0))
    design = option.get("design", "split")
    probe.MIN_TEXTS = int(option.get("min_texts", probe.MIN_TEXTS))
    probe.CONCESSIVE = option.get("concessive", "0") == "1"
    probe.CONTENT_SCOPE = option.get("content_scope", "0") != "0"
    if option.get("content_scope") == "2":
        probe.FUNCTION_WORDS = probe.ARTICLES_PREPOSITIONS
    train, train_labels = probe.load("train[:15000]")
    sets, suite = probe.scored_sets(option.get("part", "dev"))
    phrases = [(t, int(x)) for t, x, _ in treebank.rows(probe.TREES, "train.txt", True)]
    neutral = [t for t, x in phrases if x == 2]
    phrases = [(t, x) for t, x in phrases if x != 2][: int(option.get("phrases", 10**6))]
    if option.get("neutral", "0") == "1":  # each neutral phrase once as negative, once positive
        phrases += [(t, 0) for t in neutral] + [(t, 4) for t in neutral]
    texts = train + [t for t, _ in phrases]
    labels = np.concatenate([train_labels, [int(x > 2) for _, x in phrases]])

    def long_rows(batch):
        return np.array([len(probe.TOKEN.findall(t.lower())) >= short for t in batch])

    def sentence_rows(batch):
        return np.ones(len(batch), bool) if design == "sum" else ~long_rows(batch)

    def review_rows(batch):  # design=shared: every input has the review block as well
        return np.ones(len(batch), bool) if design == "shared" else long_rows(batch)

    is_long = long_rows(texts)
    print(f"{is_long.sum()} long rows, {(~is_long).sum()} short (of {len(texts)})")
    scope = (option.get("sentence_mode", "flip"), *fusion.SENTENCE_SCOPE[1:])  # pure: no N:
    sentence = Block(texts, labels, sentence_rows(texts), scope, letters)
    review = Block(texts, labels, review_rows(texts), fusion.SETTINGS, 0.0)
    model = probe.batched_model(
        "adam", int(option.get("epochs", 10)), float(option.get("adam", 0.03))
    )
    bias = float(option.get("bias", 0))  # bias=V: a feature of value V per block, its own bias

    def biases(batch):
        held = np.stack([sentence_rows(batch), long_rows(batch)], axis=1)
        return sp.csr_matrix(bias * held.astype(float))

    model.fit(normalised(sp.hstack([sentence.train, review.train, biases(texts)])), labels)
    row = []
    for name, (batch, gold) in sets.items():
        inputs = sp.hstack(
            [
                sentence.of(batch, sentence_rows(batch)),
                review.of(batch, review_rows(batch)),
                biases(batch),
            ]
        )
        right = (fusion.log_odds(model, normalised(inputs)) > 0).astype(int) == gold
        row.append(f"{right.mean():.4f}")
        if name == "suite":
            row += [f"{share:.2f}" for share in probe.by_capability(suite, right).values()]
    capabilities = dict.fromkeys(r["capability"] for r in suite)
    print("| options | IMDB val | SST-2 dev | suite | " + " | ".join(capabilities) + " |")
    print(f"| {' '.join(sys.argv[1:]) or 'defaults'} | " + " | ".join(row) + " |")
    print(f"({time.time() - started:.0f} s)")


if __name__ == "__main__":
    main()

"""Why ``nbow`` reads few negated negatives where the scikit-learn probe reads most: the same
features and penalty fitted two ways, and their average (a probe, not the product).

The probe's features (``experiments/negation_scope.py``, mode ``flip:c=0.25:comma=1:n=4``: a
full flip within four words to the clause's end, a quarter weight before "but") on IMDB's first
15,000 training reviews, fitted by logistic regression to convergence (C=30) and by Adam as
``nbow`` trains (10 epochs in batches of 1,024 at 0.03, the same L2 penalty); scored on the next
10,000 reviews, SST-2's dev sentences and the behaviour suite's dev part, then each model's
per-n-gram contributions to three negated negatives printed side by side.

Run (about 3 minutes on 2 cores)::

    TFDS_DATA_DIR=../shared/tensorflow_datasets python experiments/negation_optimiser.py

Results (2026-11-27, AMD EPYC, 2 cores): docs/results.md, "The optimiser is the difference".
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, str(Path(__file__).resolve().parent))
import negation_scope as probe  # noqa: E402 - the probe's features, beside this file

SETTINGS = probe.SCOPED
SENTENCES = [
    "The ending was not dull at all.",
    "This film was never predictable.",
    "The cast did not disappoint.",
]


def main() -> None:
    train, labels = probe.load("train[:15000]")
    sets, suite = probe.scored_sets()
    matrix, vocabulary, ratios = probe.nb_features(train, labels, SETTINGS)

    def scaled(texts_or_matrix):
        m = texts_or_matrix
        if isinstance(m, list):
            m = probe.features(m, *SETTINGS, vocabulary=vocabulary)[0]
        return probe.nb_scaled(m, ratios)

    features = scaled(matrix)
    converged = LogisticRegression(C=30, max_iter=2000).fit(features, labels)
    adam = probe.batched_model("adam", 10, 0.03).fit(features, labels)
    weights = {
        "converged": (converged.coef_.ravel(), float(converged.intercept_[0])),
        "Adam": (adam.coefs_[0].ravel(), float(adam.intercepts_[0][0])),
    }

    def log_odds(name, m):
        if name == "average":
            return (log_odds("converged", m) + log_odds("Adam", m)) / 2
        kernel, bias = weights[name]
        return m @ kernel + bias

    scored = {name: (scaled(texts), y) for name, (texts, y) in sets.items()}
    for name in ("converged", "Adam", "average"):
        right = {k: (log_odds(name, m) > 0) == y for k, (m, y) in scored.items()}
        shares = probe.by_capability(suite, right["suite"])
        shown = " ".join(f"{k}={share:.2f}" for k, share in shares.items())
        print(f"{name:9s} imdb-val {right['imdb-val'].mean():.4f} "
              f"sst2-dev {right['sst2-dev'].mean():.4f} suite {right['suite'].mean():.3f} {shown}")  # fmt: skip
    for name, (kernel, _) in weights.items():
        print(f"{name}: weight norm {np.linalg.norm(kernel):.1f}")
    grams = {i: gram for gram, i in vocabulary.items()}
    for text in SENTENCES:
        row = scaled([text]).tocoo()
        print(f"\n{text}  log-odds: converged {log_odds('converged', row.tocsr())[0]:+.2f}, "
              f"Adam {log_odds('Adam', row.tocsr())[0]:+.2f}")  # fmt: skip
        adam_kernel, converged_kernel = weights["Adam"][0], weights["converged"][0]
        for col, value in sorted(zip(row.col, row.data, strict=True), key=lambda cv: -abs(cv[1])):
            print(f"  {grams[col]:22s} converged {value * converged_kernel[col]:+.3f}  "
                  f"Adam {value * adam_kernel[col]:+.3f}")  # fmt: skip


if __name__ == "__main__":
    main()

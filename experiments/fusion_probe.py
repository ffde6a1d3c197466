"""Does attention add to the NB-weighted n-grams when it learns their residual? A validation-only
probe for issue #28, before a fused variant is built into the product.

On the 15,000 training reviews (``configs/variants/nbow.yaml``'s split):

1. ``nbow`` is trained K times on K-1 folds; each review's out-of-fold log-odds ``o(x)`` is what
   a model that never saw it says (cross-fitting: ``nbow`` fits its own training reviews to
   0.9999, so in-sample log-odds leave nothing to learn);
2. ``nbow`` is trained once on all 15,000: the branch that serves, ``z_nb(x)``;
3. the attention reader (the ``attention`` variant's stack on the last 512 words, one logit
   ``z_att``) is trained twice: alone (``sigmoid(z_att)``) and on the residual
   (``sigmoid(o(x) + z_att)``, ``o`` a fixed offset).

With ``--word-vectors D`` the reader starts from word vectors learnt on unlabelled text instead
of a random embedding: the D-dimensional PPMI-SVD vectors (Levy & Goldberg 2014: positive
pointwise mutual information of words within 5 of each other, context counts smoothed by the
power 0.75, a truncated SVD weighted by the square root of its singular values) of the 15,000
training reviews and the 50,000 unlabelled ones (never the validation or test reviews); the
reader keeps them fixed (``--tune-vectors``: trains them further).

Every model is chosen and scored on the 10,000 validation reviews only (never the test split):
``nbow`` alone, the reader alone, their sum ``z_nb + z_att``, and a logistic-regression stack
of the two log-odds with its weights chosen by 5-fold cross-validation inside validation. The
reader's epoch is cross-chosen: each half of validation is scored with the epoch that did best
on the other half. ``--residual-only`` skips the reader alone.

    TFDS_DATA_DIR=../shared/tensorflow_datasets python experiments/fusion_probe.py --folds 2
    TFDS_DATA_DIR=../shared/tensorflow_datasets python experiments/fusion_probe.py --word-vectors 64

Prints one table (validation accuracy); takes about 20 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import scipy.sparse  # noqa: E402
import tensorflow as tf  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import StratifiedKFold  # noqa: E402
from sklearn.utils.extmath import randomized_svd  # noqa: E402

from classifier.config.schema import load_config  # noqa: E402
from classifier.data.pipeline import (  # noqa: E402
    ReviewVectorizer,
    build_vectorizer,
    load_raw_splits,
    load_unsupervised,
    vectorize,
)
from classifier.layers import MaskedGlobalAveragePooling1D, padding_mask  # noqa: E402
from classifier.models.classifier import (  # noqa: E402
    attention_stack,
    build_classifier,
    set_log_count_ratios,
)


def arrays(dataset: tf.data.Dataset) -> tuple[np.ndarray, np.ndarray]:
    texts, labels = [], []
    for text, label in dataset.as_numpy_iterator():
        texts.append(text)
        labels.append(label)
    return np.array(texts, dtype=object), np.array(labels, dtype=np.int64)


def batches(texts, targets, vectorizer, batch_size, seed=None) -> tf.data.Dataset:
    data = tf.data.Dataset.from_tensor_slices((list(texts), targets))
    return vectorize(data, vectorizer, batch_size, shuffle_seed=seed, bucket_by_length=True)


def nbow_log_odds(cfg, vectorizer, texts, labels, epochs, score_texts, seed) -> list[np.ndarray]:
    """Train ``nbow`` on (texts, labels) for ``epochs``; its log-odds on each of ``score_texts``."""
    keras.utils.set_random_seed(seed)
    model = build_classifier(cfg.model, cfg.data.vocab_size, cfg.data.sequence_length)
    train = batches(texts, labels, vectorizer, cfg.data.batch_size, seed)
    set_log_count_ratios(model, train)
    model.compile(keras.optimizers.Adam(cfg.train.learning_rate), "sparse_categorical_crossentropy")
    model.fit(train, epochs=epochs, verbose=0)
    bag = keras.Model(model.input, model.get_layer("bag").output)
    scores = []
    for other in score_texts:
        logits = bag.predict(batches(other, np.zeros(len(other)), vectorizer, 256), verbose=0)
        scores.append(logits[:, 1] - logits[:, 0])
    return scores, model  # scores in the order of the bucketed batches: see ordered()


def ordered(texts, vectorizer) -> np.ndarray:
    """The order in which :func:`batches` without shuffling yields ``texts`` (bucketed)."""
    index = np.arange(len(texts), dtype=np.int64)
    data = batches(texts, index, vectorizer, 256)
    return np.concatenate([labels.numpy() for _, labels in data])


def ppmi_vectors(vectorizer, texts, dim: int, seed: int, window: int = 5) -> np.ndarray:
    """(vocab_size, dim) PPMI-SVD word vectors of ``texts``, unit length (rows 0 and 1, padding
    and out-of-vocabulary, are zero)."""
    size = vectorizer.vocab_size
    counts = scipy.sparse.csr_matrix((size, size), dtype=np.float64)
    for start in range(0, len(texts), 1024):
        ids = np.asarray(vectorizer(np.array(list(texts[start : start + 1024]), dtype=object)))
        rows, cols = [], []
        for distance in range(1, window + 1):
            left, right = ids[:, :-distance].ravel(), ids[:, distance:].ravel()
            both = (left > 1) & (right > 1)
            rows += [left[both], right[both]]
            cols += [right[both], left[both]]
        rows, cols = np.concatenate(rows), np.concatenate(cols)
        counts += scipy.sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(size, size))
    pairs = counts.tocoo()
    words = np.asarray(counts.sum(axis=1)).ravel()
    contexts = np.asarray(counts.sum(axis=0)).ravel() ** 0.75
    contexts /= contexts.sum()
    pmi = np.log(pairs.data) - np.log(words[pairs.row]) - np.log(contexts[pairs.col])
    keep = pmi > 0
    ppmi = scipy.sparse.csr_matrix(
        (pmi[keep], (pairs.row[keep], pairs.col[keep])), shape=(size, size)
    )
    u, sigma, _ = randomized_svd(ppmi, dim, n_iter=5, random_state=seed)
    vectors = u * np.sqrt(sigma)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    seen = norms > 1e-8  # a word that never met another (and padding, OOV): rounding noise
    return np.where(seen, vectors / np.where(seen, norms, 1.0), 0.0).astype("float32")


def reader(cfg, vocab_size: int, length: int, vectors=None, tune: bool = False) -> keras.Model:
    """The ``attention`` variant's stack, pooled, to one logit; its token embedding set to
    ``vectors`` (and kept fixed unless ``tune``) when given."""
    token_ids = keras.Input(shape=(None,), dtype="int64")
    mask = padding_mask(token_ids)
    x = attention_stack(cfg.model, token_ids, mask, vocab_size, length)
    x = MaskedGlobalAveragePooling1D()(x, mask=mask)
    x = keras.layers.Dropout(cfg.model.dropout)(x)
    model = keras.Model(token_ids, keras.layers.Dense(1)(x)[:, 0])
    if vectors is not None:
        embedding = model.get_layer("embedding").token_embedding
        embedding.embeddings.assign(vectors)
        embedding.trainable = tune
    return model


def residual_loss(target, logit):
    """``target`` = (label, offset): cross-entropy of ``sigmoid(offset + logit)``."""
    label, offset = target[:, 0], target[:, 1]
    return keras.ops.mean(keras.ops.binary_crossentropy(label, offset + logit, from_logits=True))


def train_reader(
    cfg,
    vectorizer,
    texts,
    labels,
    offsets,
    val_texts,
    val_offsets,
    val_labels,
    epochs,
    seed,
    vectors=None,
    tune=False,
):
    """Train the reader on ``sigmoid(offset + z)``, epoch by epoch (stopped 3 epochs after the
    best validation accuracy of ``val_offset + z``). Each validation review's ``z`` comes from
    the epoch that scored best on the *other* half of validation (:func:`cross_chosen`), so no
    review's score comes from an epoch chosen on it. Returns (z on validation, the epochs each
    half chose, seconds)."""
    keras.utils.set_random_seed(seed)
    model = reader(cfg, vectorizer.vocab_size, vectorizer.sequence_length, vectors, tune)
    model.compile(keras.optimizers.Adam(cfg.train.learning_rate), residual_loss)
    train = batches(
        texts, np.c_[labels, offsets].astype("float32"), vectorizer, cfg.data.batch_size, seed
    )
    val = batches(val_texts, np.arange(len(val_texts)), vectorizer, 256)
    val_order = np.concatenate([y.numpy() for _, y in val])
    per_epoch, best, best_epoch, start = [], -1.0, 0, time.time()
    for epoch in range(1, epochs + 1):
        model.fit(train, epochs=1, verbose=0)
        z = np.empty(len(val_texts))
        z[val_order] = model.predict(val, verbose=0)
        per_epoch.append(z)
        accuracy = float(((val_offsets + z > 0) == val_labels).mean())
        print(f"    epoch {epoch}: validation accuracy {accuracy:.4f}", flush=True)
        if accuracy > best:
            best, best_epoch = accuracy, epoch
        elif epoch - best_epoch >= 3:
            break
    z, chosen = cross_chosen(per_epoch, val_offsets, val_labels, seed)
    return z, chosen, time.time() - start


def cross_chosen(per_epoch, offsets, labels, seed: int) -> tuple[np.ndarray, list[int]]:
    """Split validation in two halves (stratified); each half's ``z`` is taken from the epoch
    with the best accuracy of ``offset + z`` on the other half. Returns (z, the two epochs)."""
    z, chosen = np.empty(len(labels)), []
    halves = StratifiedKFold(2, shuffle=True, random_state=seed).split(labels, labels)
    for choose, score in halves:
        accuracies = [
            ((offsets[choose] + e[choose] > 0) == labels[choose]).mean() for e in per_epoch
        ]
        epoch = int(np.argmax(accuracies))
        z[score] = per_epoch[epoch][score]
        chosen.append(epoch + 1)
    return z, chosen


def stacked_accuracy(columns: list[np.ndarray], labels: np.ndarray, max_iter: int = 100) -> float:
    """Accuracy of a logistic regression on the log-odds (one column each), 5-fold
    cross-validated (``max_iter``: its solver's iterations)."""
    features = np.column_stack(columns)
    predicted = np.zeros_like(labels)
    for fit, held in StratifiedKFold(5, shuffle=True, random_state=0).split(features, labels):
        stack = LogisticRegression(C=1e4, max_iter=max_iter).fit(features[fit], labels[fit])
        predicted[held] = stack.predict(features[held])
    return float((predicted == labels).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--folds", type=int, default=2)
    parser.add_argument("--nbow-epochs", type=int, default=12, help="best epoch of the probe")
    parser.add_argument("--reader-epochs", type=int, default=12)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--word-vectors", type=int, default=0, metavar="D", help="PPMI-SVD vectors of D dims"
    )
    parser.add_argument("--tune-vectors", action="store_true", help="train the vectors further")
    parser.add_argument("--residual-only", action="store_true", help="skip the reader alone")
    parser.add_argument(
        "--reader-set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override the reader's config (configs/variants/attention.yaml), e.g. "
        "train.learning_rate=3e-4",
    )
    args = parser.parse_args()
    cfg = load_config("configs/variants/nbow.yaml", [f"train.seed={args.seed}"])
    width = [f"model.embed_dim={args.word_vectors}"] if args.word_vectors else []
    reader_cfg = load_config(
        "configs/variants/attention.yaml", [f"train.seed={args.seed}", *width, *args.reader_set]
    )
    raw = load_raw_splits(cfg.data)
    texts, labels = arrays(raw.train)
    val_texts, val_labels = arrays(raw.validation)
    vectorizer = build_vectorizer(cfg.data, raw.train)
    words = ReviewVectorizer(
        cfg.data.vocab_size,
        reader_cfg.data.sequence_length,
        "tail",
        vectorizer.get_vocabulary()[2:],
    )
    val_order = ordered(val_texts, vectorizer)
    vectors = None
    if args.word_vectors:
        start = time.time()
        unlabelled = list(load_unsupervised(cfg.data).as_numpy_iterator())
        vectors = ppmi_vectors(vectorizer, [*texts, *unlabelled], args.word_vectors, args.seed)
        seconds = time.time() - start
        print(f"PPMI-SVD vectors of {len(texts) + len(unlabelled):,} reviews: {seconds:.0f} s")

    print(f"nbow on all {len(texts):,} training reviews", flush=True)
    (z_val_sorted,), _ = nbow_log_odds(
        cfg, vectorizer, texts, labels, args.nbow_epochs, [val_texts], args.seed
    )
    z_nb = np.empty(len(val_texts))
    z_nb[val_order] = z_val_sorted
    offsets = np.empty(len(texts))
    folds = StratifiedKFold(args.folds, shuffle=True, random_state=args.seed)
    for k, (fit, held) in enumerate(folds.split(texts, labels), 1):
        print(f"nbow fold {k}/{args.folds}: out-of-fold log-odds", flush=True)
        (scores,), _ = nbow_log_odds(
            cfg, vectorizer, texts[fit], labels[fit], args.nbow_epochs, [texts[held]], args.seed
        )
        offsets[held[ordered(texts[held], vectorizer)]] = scores
    print(f"out-of-fold nbow accuracy on training reviews {((offsets > 0) == labels).mean():.4f}")

    rows = [("nbow alone", float(((z_nb > 0) == val_labels).mean()), "")]
    readers = [
        ("reader alone", np.zeros(len(texts)), np.zeros(len(val_texts))),
        ("reader on the residual", offsets, z_nb),
    ]
    for name, train_offsets, val_offsets in readers[args.residual_only :]:
        print(name, flush=True)
        z, epochs, seconds = train_reader(
            reader_cfg,
            words,
            texts,
            labels,
            train_offsets,
            val_texts,
            val_offsets,
            val_labels,
            args.reader_epochs,
            args.seed,
            vectors,
            args.tune_vectors,
        )
        summed = float(((val_offsets + z > 0) == val_labels).mean())
        rows.append((name, summed, f"epochs {epochs[0]} and {epochs[1]}, {seconds:.0f} s"))
        rows.append((f"  stack(nbow, {name})", stacked_accuracy([z_nb, z], val_labels), "5-fold"))
    if args.word_vectors:
        tuned = "tuned" if args.tune_vectors else "fixed"
        reading = f", the reader on {args.word_vectors}-d PPMI-SVD vectors ({tuned})"
    else:
        reading = ""
    if args.reader_set:
        reading += ", " + " ".join(args.reader_set)
    print(
        f"\n| model (seed {args.seed}, {args.folds} folds{reading}) | validation accuracy | note |"
    )
    print("|---|---|---|")
    for name, accuracy, note in rows:
        print(f"| {name} | {accuracy:.4f} | {note} |")


if __name__ == "__main__":
    main()

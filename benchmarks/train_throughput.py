"""Training throughput of our classifiers against the same architectures written plainly in Keras.

For each variant two models of the same architecture and size train on the same reviews in the
same process, one epoch each in turn (interleaved), with the same optimizer, loss and batch size:

- **ours**: ``build_classifier`` and the input pipeline of ``classify train`` (token ids cached
  once, seeded shuffle, batches bucketed by review length and padded to their longest review,
  padding masked);
- **reference**: the architecture as the public Keras tutorials write it (keras.io "Text
  classification with Transformer" and the raw-attention experiments): ``keras.layers`` only
  (Embedding, ``Attention``, ``MultiHeadAttention``, the tutorial's TransformerBlock and
  TokenAndPositionEmbedding, ``GlobalAveragePooling1D``), no masks, NumPy arrays padded to
  ``sequence_length`` given to ``model.fit(x, y, batch_size=...)``. Sizes match ours (key_dim =
  embed_dim / heads, the same dropout and head), so the parameter counts are equal.

Throughput is training reviews per second of one epoch (timed from the start to the end of the
epoch, no validation), median over epochs 2..N (epoch 1 traces the graph). Both models are then
evaluated on the test reviews. ``--ablation`` adds ours without length buckets (ids padded to
``sequence_length``), which isolates what the buckets bring from what our layers cost.

The bags of n-grams (``bow``, ``nbow``, ``nbow_attention``) have no tutorial counterpart; their
table sets the recipe of their config (``configs/variants/NAME.yaml``) beside the batches of 256
at Adam 0.01 that ``nbow`` used until 2026-11-26, in the same way: both interleaved, an epoch
each in turn, the same reviews, ``classify train``'s pipeline and model (NB ratios or idf from
the training reviews), median of epochs 2..N, then test accuracy. ``nbow_attention`` also
trains its attention reader alone (the same layers, on token ids, without the n-gram branch),
in the batches of "before" and of the recipe, so that a second table can give the n-gram
branch's share of an epoch: the epoch less the reader's in the same batches. A recipe with
``train.lazy_adam`` (``bow``'s) is also trained with Keras' Adam over every row, its recipe until
2026-11-27, for a third table.

Usage:
    python benchmarks/train_throughput.py              # full data: 15,000 train / 25,000 test, 4 epochs
    python benchmarks/train_throughput.py --quick      # 4,000 / 2,000 reviews, 3 epochs (minutes)
    python benchmarks/train_throughput.py --variants attention,encoder --ablation
    python benchmarks/train_throughput.py --variants "" --ngram-variants nbow,bow,nbow_attention
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from keras import layers, ops  # noqa: E402
from machine import cpu_model  # noqa: E402

from classifier.config.schema import Config, load_config  # noqa: E402
from classifier.config.variants import get as get_variant  # noqa: E402
from classifier.config.variants import names as variant_names  # noqa: E402
from classifier.data.pipeline import (  # noqa: E402
    build_vectorizer,
    load_raw_splits,
    make_datasets,
)
from classifier.errors import DataNotFoundError  # noqa: E402
from classifier.models.classifier import build_classifier  # noqa: E402
from classifier.training.build import new_model  # noqa: E402
from classifier.training.ngram_features import fit_inputs, reader  # noqa: E402

SEED = 0
VARIANT_CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "variants"
#: The variants with a plain-Keras reference (the tutorials' attention models).
ATTENTION_VARIANTS = tuple(name for name in variant_names() if get_variant(name).builds != "logits")
QUICK_TRAIN, QUICK_TEST = 4000, 2000


# --- The reference: the tutorial's layers, written as the tutorials write them ---------------


class TutorialTransformerBlock(layers.Layer):
    """keras.io's TransformerBlock: MHA, dropout, add & norm, feed-forward, dropout, add & norm."""

    def __init__(self, embed_dim, num_heads, ff_dim, rate=0.1, **kwargs):
        super().__init__(**kwargs)
        self.att = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim // num_heads)
        self.ffn = keras.Sequential(
            [layers.Dense(ff_dim, activation="relu"), layers.Dense(embed_dim)]
        )
        self.layernorm1 = layers.LayerNormalization(epsilon=1e-6)
        self.layernorm2 = layers.LayerNormalization(epsilon=1e-6)
        self.dropout1 = layers.Dropout(rate)
        self.dropout2 = layers.Dropout(rate)

    def call(self, inputs, training=None):
        attn_output = self.att(inputs, inputs)
        attn_output = self.dropout1(attn_output, training=training)
        out1 = self.layernorm1(inputs + attn_output)
        ffn_output = self.ffn(out1)
        ffn_output = self.dropout2(ffn_output, training=training)
        return self.layernorm2(out1 + ffn_output)


class TutorialTokenAndPositionEmbedding(layers.Layer):
    """keras.io's TokenAndPositionEmbedding (learned positions), or the TF tutorial's sinusoids."""

    def __init__(self, maxlen, vocab_size, embed_dim, position="learned", **kwargs):
        super().__init__(**kwargs)
        self.token_emb = layers.Embedding(input_dim=vocab_size, output_dim=embed_dim)
        self.position = position
        if position == "learned":
            self.pos_emb = layers.Embedding(input_dim=maxlen, output_dim=embed_dim)
        elif position == "sinusoidal":
            self.table = sinusoids(maxlen, embed_dim)

    def call(self, x):
        maxlen = ops.shape(x)[-1]
        if self.position == "learned":
            positions = self.pos_emb(ops.arange(start=0, stop=maxlen, step=1))
        elif self.position == "sinusoidal":
            positions = self.table[:maxlen]
        else:
            positions = 0.0
        return self.token_emb(x) + positions


def sinusoids(length: int, depth: int) -> np.ndarray:
    """The TF tutorial's positional_encoding: sin on even, cos on odd dimensions."""
    positions = np.arange(length)[:, None]
    rates = 1 / np.power(10000, (2 * (np.arange(depth)[None, :] // 2)) / np.float32(depth))
    angles = positions * rates
    angles[:, 0::2] = np.sin(angles[:, 0::2])
    angles[:, 1::2] = np.cos(angles[:, 1::2])
    return angles.astype("float32")


def reference_model(cfg: Config) -> keras.Model:
    """The variant of ``cfg`` written plainly with keras.layers, no masks (as the tutorials)."""
    m, d = cfg.model, cfg.data
    position = {"block_pos": "learned", "encoder": m.position}.get(m.variant)
    inputs = keras.Input(shape=(d.sequence_length,), dtype="int64")
    x = TutorialTokenAndPositionEmbedding(d.sequence_length, d.vocab_size, m.embed_dim, position)(
        inputs
    )
    if m.variant == "attention":
        for _ in range(2):
            x = layers.Attention()([x, x])
    elif m.variant == "mha":
        for _ in range(2):
            x = layers.MultiHeadAttention(
                m.num_heads, m.embed_dim // m.num_heads, dropout=m.dropout
            )(x, x)
    else:
        for _ in range(m.num_layers if m.variant == "encoder" else 1):
            x = TutorialTransformerBlock(m.embed_dim, m.num_heads, m.ff_dim, m.dropout)(x)
    x = layers.GlobalAveragePooling1D()(x)
    x = layers.Dropout(m.dropout)(x)
    outputs = layers.Dense(2, activation="softmax")(x)
    return keras.Model(inputs, outputs)


# --- Timing ----------------------------------------------------------------------------------


class EpochTimer(keras.callbacks.Callback):
    """Wall time of each training epoch (from its first batch's start to its last batch's end)."""

    def __init__(self):
        super().__init__()
        self.seconds: list[float] = []

    def on_epoch_begin(self, epoch, logs=None):
        self._started = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.seconds.append(time.perf_counter() - self._started)


@dataclasses.dataclass
class Contender:
    """One model and how it is fed: ``fit_epoch(epoch)`` trains one more epoch."""

    name: str
    model: keras.Model
    fit_epoch: Callable[[int], None]
    evaluate: Callable[[], float]
    timer: EpochTimer


def compiled(model: keras.Model, cfg: Config) -> keras.Model:
    model.compile(
        optimizer=keras.optimizers.Adam(cfg.train.learning_rate),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    return model


def pipeline_contender(name: str, model: keras.Model, data, cfg: Config | None = None) -> Contender:
    """``model`` fed by ``classify train``'s pipelines ``data``: one timed epoch at a time.
    With ``cfg``, trained as ``classify train`` trains it (a bag of n-grams: on its features
    computed once, :func:`~classifier.training.ngram_features.fit_inputs`); without, on the
    token-id batches (how ``classify train`` trained every variant until 2026-11-26)."""
    timer = EpochTimer()
    trainer, train, _ = (
        fit_inputs(model, data.train, None, cfg.data, SEED, cfg.train.lazy_adam)
        if cfg
        else (model, data.train, None)
    )

    def fit_epoch(epoch):
        trainer.fit(
            train,
            epochs=epoch + 1,
            initial_epoch=epoch,
            callbacks=[timer],
            shuffle=False,  # the pipeline shuffles, seeded, as in `classify train`
            verbose=0,
        )

    def evaluate():
        return model.evaluate(data.test, verbose=0, return_dict=True)["accuracy"]

    return Contender(name, model, fit_epoch, evaluate, timer)


def contenders(cfg: Config, raw, vectorizer, arrays, ablation: bool) -> list[Contender]:
    """Ours (bucketed; optionally also padded to T) and the reference, each freshly seeded."""
    result = []
    runs = [("ours", True)] + ([("ours, padded to T", False)] if ablation else [])
    for name, bucket in runs:
        data_cfg = dataclasses.replace(cfg.data, bucket_by_length=bucket)
        data = make_datasets(data_cfg, raw, vectorizer, seed=SEED)
        keras.utils.set_random_seed(SEED)
        model = compiled(
            build_classifier(cfg.model, data_cfg.vocab_size, data_cfg.sequence_length), cfg
        )
        result.append(pipeline_contender(name, model, data, cfg))

    keras.utils.set_random_seed(SEED)
    reference = compiled(reference_model(cfg), cfg)
    timer = EpochTimer()
    x_train, y_train, x_test, y_test = arrays

    def fit_reference(epoch):
        reference.fit(
            x_train,
            y_train,
            batch_size=cfg.data.batch_size,
            epochs=epoch + 1,
            initial_epoch=epoch,
            shuffle=True,
            callbacks=[timer],
            verbose=0,
        )

    def evaluate_reference():
        return reference.evaluate(
            x_test, y_test, batch_size=cfg.data.batch_size, verbose=0, return_dict=True
        )["accuracy"]

    result.append(Contender("reference", reference, fit_reference, evaluate_reference, timer))
    return result


def to_arrays(dataset: tf.data.Dataset, vectorizer) -> tuple[np.ndarray, np.ndarray]:
    """(ids padded to sequence_length, labels) as NumPy arrays: what the tutorials feed."""
    ids, labels = [], []
    for texts, batch_labels in dataset.batch(1024):
        ids.append(vectorizer(texts).numpy())
        labels.append(batch_labels.numpy())
    return np.concatenate(ids), np.concatenate(labels)


def benchmark(variant: str, overrides: list[str], epochs: int, ablation: bool, cache: dict) -> dict:
    cfg = load_config(VARIANT_CONFIGS / f"{variant}.yaml", overrides)
    key = dataclasses.astuple(dataclasses.replace(cfg.data, bucket_by_length=True))
    if key not in cache:  # one vocabulary per data config, shared by every variant using it
        raw = load_raw_splits(cfg.data)
        vectorizer = build_vectorizer(cfg.data, raw.train)
        arrays = (*to_arrays(raw.train, vectorizer), *to_arrays(raw.test, vectorizer))
        cache[key] = raw, vectorizer, arrays
    raw, vectorizer, arrays = cache[key]
    runs = contenders(cfg, raw, vectorizer, arrays, ablation)
    for epoch in range(epochs):
        for run in runs:  # interleaved: one epoch each, in turn
            run.fit_epoch(epoch)
        summary = "  ".join(f"{run.name} {run.timer.seconds[-1]:.1f}s" for run in runs)
        print(f"  {variant} epoch {epoch + 1}/{epochs}: {summary}", file=sys.stderr, flush=True)
    reviews = len(arrays[1])
    row = {"variant": variant, "params": [run.model.count_params() for run in runs]}
    for run in runs:
        seconds = statistics.median(run.timer.seconds[1:])
        row[run.name] = {"rate": reviews / seconds, "accuracy": run.evaluate()}
    return row


#: What the n-gram rows set the config's recipe beside: ``nbow``'s and ``nbow_attention``'s until
#: 2026-11-26 (batches of 256 at Adam 0.01 on token ids). ``bow``'s batches have not changed: its
#: "before" is its recipe on token ids (where ``train.lazy_adam`` does nothing: Keras' Adam).
BEFORE = {
    name: {"data.batch_size": 256, "train.learning_rate": 0.01}
    for name in ("nbow", "nbow_attention")
}


def ngram_benchmark(variant: str, overrides: list[str], epochs: int, keras_l2: bool) -> dict:
    """``variant``'s recipe as ``classify train`` trains it, the same on token ids, and
    :data:`BEFORE` on token ids, interleaved: training reviews/s and test accuracy of each.
    With ``keras_l2`` also the recipe with Keras' own L2 regularizer on the kernel in place of
    :class:`~classifier.layers.ngrams.SquaredNorm` (the same penalty, a slower gradient)."""
    runs = []
    raw = vectorizer = None
    before = BEFORE.get(variant, {})
    ngram_runs = [  # name, settings, trained as classify trains it, the reader alone
        ("before", before, False, False),  # the product until 2026-11-26, on token ids
        ("ids", {}, False, False),  # the recipe's batches, on token ids
        ("recipe", {}, True, False),  # the recipe as `classify train` trains it: on features
    ]
    if keras_l2:
        ngram_runs.append(("recipe, Keras' L2", {}, True, False))
    if load_config(VARIANT_CONFIGS / f"{variant}.yaml", overrides).train.lazy_adam:
        ngram_runs.append(("recipe, dense Adam", {"train.lazy_adam": False}, True, False))
    for name, settings, as_classify, alone in ngram_runs:  # grows by the reader's runs
        extra = [f"{key}={value}" for key, value in settings.items()]
        cfg = load_config(VARIANT_CONFIGS / f"{variant}.yaml", [*overrides, *extra])
        if raw is None:
            raw = load_raw_splits(cfg.data)
            vectorizer = build_vectorizer(cfg.data, raw.train)
        data = make_datasets(cfg.data, raw, vectorizer, seed=SEED)
        keras.utils.set_random_seed(SEED)
        model = new_model(cfg, data.train)  # the NB ratios (or idf) from the training reviews
        if not runs and reader(model) is not None:  # and its reader alone, at both batches
            ngram_runs += [("reader before", before, False, True), ("reader", {}, False, True)]
        if alone:
            model = reader_alone(model)
        if name == "recipe, Keras' L2":
            model.get_layer("bag").kernel.regularizer = keras.regularizers.L2(cfg.model.l2)
        label = f"{cfg.data.batch_size} at {cfg.train.learning_rate:g}"
        runs.append(
            (name, label, pipeline_contender(name, model, data, cfg if as_classify else None))
        )
    for epoch in range(epochs):
        for _, _, run in runs:
            run.fit_epoch(epoch)
        summary = "  ".join(f"{name} {run.timer.seconds[-1]:.1f}s" for name, _, run in runs)
        print(f"  {variant} epoch {epoch + 1}/{epochs}: {summary}", file=sys.stderr, flush=True)
    reviews = int(raw.train.cardinality())
    row = {"variant": variant}
    for name, label, run in runs:
        seconds = statistics.median(run.timer.seconds[1:])
        row[name] = {
            "label": label,
            "seconds": seconds,
            "rate": reviews / seconds,
            "accuracy": run.evaluate(),
        }
    return row


def reader_alone(model: keras.Model) -> keras.Model:
    """``nbow_attention``'s attention reader and softmax head without its n-gram branch, its
    layers those of ``model`` and compiled as it is."""
    alone = keras.Model(model.input, model.get_layer("head")(reader(model).output))
    alone.compile(optimizer=model.optimizer, loss=model.loss, metrics=["accuracy"])
    return alone


def print_ngram_rows(rows: list[dict], train_size: int, epochs: int) -> None:
    print(
        f"\n### Training throughput of the bags of n-grams: their recipe as `classify train` "
        f"trains it (on n-gram features computed once), the same batches on token ids, and "
        f"batches of 256 at Adam 0.01 on token ids ({train_size:,} training reviews, median of "
        f"epochs 2-{epochs}; {cpu_model()}, {os.cpu_count()} cores)\n"
    )
    print("| variant | before: batch at lr, ids | reviews/s | recipe on ids | reviews/s | "
          "recipe (classify train) | reviews/s | recipe / before | test acc before | "
          "test acc ids | test acc recipe |")  # fmt: skip
    print("|---|---|---:|---|---:|---|---:|---:|---:|---:|---:|")
    for row in rows:
        before, ids, recipe = row["before"], row["ids"], row["recipe"]
        print(
            f"| {row['variant']} | {before['label']} | {before['rate']:.0f} | {ids['label']} | "
            f"{ids['rate']:.0f} | {recipe['label']} | {recipe['rate']:.0f} | "
            f"{recipe['rate'] / before['rate']:.2f}x | {before['accuracy']:.4f} | "
            f"{ids['accuracy']:.4f} | {recipe['accuracy']:.4f} |"
        )
    penalised = [row for row in rows if "recipe, Keras' L2" in row]
    if penalised:
        print(
            "\n### The recipe with the kernel's L2 penalty as SquaredNorm (now) and as Keras' "
            "L2 regularizer (the same value and gradient)\n"
        )
        print(
            "| variant | Keras' L2: epoch (s) | SquaredNorm: epoch (s) | Keras' L2 / SquaredNorm |"
        )
        print("|---|---:|---:|---:|")
        for row in penalised:
            keras_l2, ours = row["recipe, Keras' L2"]["seconds"], row["recipe"]["seconds"]
            print(f"| {row['variant']} | {keras_l2:.2f} | {ours:.2f} | {keras_l2 / ours:.2f}x |")
    dense = [row for row in rows if "recipe, dense Adam" in row]
    if dense:
        print(
            "\n### The recipe's lazy Adam (`train.lazy_adam`: each batch's kernel rows, XLA) "
            "against Keras' Adam over every row (the recipe until 2026-11-27), both on features\n"
        )
        print("| variant | dense Adam: epoch (s) | lazy Adam: epoch (s) | dense / lazy | "
              "test acc dense | test acc lazy |")  # fmt: skip
        print("|---|---:|---:|---:|---:|---:|")
        for row in dense:
            old, new = row["recipe, dense Adam"], row["recipe"]
            print(
                f"| {row['variant']} | {old['seconds']:.2f} | {new['seconds']:.2f} | "
                f"{old['seconds'] / new['seconds']:.2f}x | {old['accuracy']:.4f} | "
                f"{new['accuracy']:.4f} |"
            )
    branched = [row for row in rows if "reader" in row]
    if not branched:
        return
    print(
        "\n### The n-gram branch's share of an epoch: the epoch less that of the attention "
        "reader alone (the same layers and batches on token ids, without the n-gram branch)\n"
    )
    print("| variant | before: epoch (s) | reader alone (s) | n-gram branch (s) | "
          "recipe: epoch (s) | reader alone (s) | n-gram branch (s) | "
          "branch before / recipe |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for row in branched:
        before, reader_before, recipe, reader_recipe = (
            row[name]["seconds"] for name in ("before", "reader before", "recipe", "reader")
        )
        branch_before, branch = before - reader_before, recipe - reader_recipe
        print(
            f"| {row['variant']} | {before:.2f} | {reader_before:.2f} | {branch_before:.2f} | "
            f"{recipe:.2f} | {reader_recipe:.2f} | {branch:.2f} | {branch_before / branch:.2f}x |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4,000 train / 2,000 test reviews")
    parser.add_argument("--epochs", type=int, default=None, help="epochs N (default 4; quick 3)")
    parser.add_argument("--variants", default=",".join(ATTENTION_VARIANTS), help="comma-separated")
    parser.add_argument(
        "--ngram-variants", default="nbow", help="comma-separated bags of n-grams ('' for none)"
    )
    parser.add_argument("--ablation", action="store_true", help="also ours without buckets")
    parser.add_argument(
        "--keras-l2",
        action="store_true",
        help="also the n-gram recipes with Keras' L2 regularizer (what SquaredNorm replaced)",
    )
    args = parser.parse_args()
    epochs = args.epochs or (3 if args.quick else 4)
    variants = [name for name in args.variants.split(",") if name]
    ngram_variants = [name for name in args.ngram_variants.split(",") if name]
    unknown = sorted(set(variants) - set(ATTENTION_VARIANTS)) + sorted(
        set(ngram_variants) - {"bow", "nbow", "nbow_attention"}
    )
    if unknown or epochs < 2:
        parser.error(f"unknown variant {unknown[0]!r}" if unknown else "--epochs must be >= 2")
    overrides = ["data.val_size=1000"]  # validation is not used here
    if args.quick:
        overrides += [f"data.train_size={QUICK_TRAIN}", f"data.test_size={QUICK_TEST}"]
    tf.config.experimental.enable_op_determinism()  # as `classify train` runs
    cache: dict = {}
    try:
        rows = [benchmark(v, overrides, epochs, args.ablation, cache) for v in variants]
        ngram_rows = [ngram_benchmark(v, overrides, epochs, args.keras_l2) for v in ngram_variants]
    except DataNotFoundError as error:
        sys.exit(f"train_throughput: error: {error}")
    train_size = QUICK_TRAIN if args.quick else load_config(None).data.train_size
    if rows:
        print_reference_rows(rows, train_size, epochs, args.ablation)
    if ngram_rows:
        print_ngram_rows(ngram_rows, train_size, epochs)


def print_reference_rows(rows: list[dict], train_size: int, epochs: int, ablation: bool) -> None:
    print(
        f"### Training throughput, ours vs plain-Keras reference ({train_size:,} training reviews, "
        f"median of epochs 2-{epochs}; {platform.machine()}, {os.cpu_count()} cores, "
        f"TF {tf.__version__}, Keras {keras.__version__})\n"
    )
    names = ["ours"] + (["ours, padded to T"] if ablation else []) + ["reference"]
    header = ["variant", "parameters"] + [f"{n} (reviews/s)" for n in names]
    header += [f"{n} / reference" for n in names[:-1]] + [f"{n} test acc" for n in names]
    print("| " + " | ".join(header) + " |")
    print("|---|" + "---:|" * (len(header) - 1))
    for row in rows:
        params = row["params"]
        same = all(p == params[0] for p in params)
        cells = [row["variant"], f"{params[0]:,}" if same else " / ".join(f"{p:,}" for p in params)]
        cells += [f"{row[n]['rate']:.0f}" for n in names]
        cells += [f"{row[n]['rate'] / row['reference']['rate']:.2f}x" for n in names[:-1]]
        cells += [f"{row[n]['accuracy']:.4f}" for n in names]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

"""Self-pretraining on a GPU: what a wider encoder, pretrained for longer, buys on IMDB.

The device machine lent to some sessions has an H100 but no TensorFlow and no network (see
README "On a GPU"). So ``experiments/gpu_pretrain_host.py prepare`` turns the text into token
ids here, with TensorFlow, and this script runs where Keras runs, on the device under
``KERAS_BACKEND=jax``.

``run IDS_DIR OUT``: our own :class:`~classifier.models.pretraining.MaskedLanguageModel` (the
``encoder`` variant's embedding, positions and :class:`~classifier.layers.Encoder`, output tied
to the embedding) pretrained with BERT masking (15%; 80/10/10, as
:func:`classifier.pretraining.masking.mlm_mask`, here in NumPy) for a time budget; then, for the encoder
from pretraining and from scratch alike, the ``encoder`` classifier of
:func:`~classifier.models.classifier.build_classifier` fine-tuned as ``train.refit`` does: the
epoch count and the learning rate chosen on the validation reviews (seed 1 tries each rate),
then for seeds 1 to 3 a fresh model trained on all 25,000 labelled reviews for that many epochs
and evaluated once on the 25,000 test reviews. It prints the tables and writes
``OUT/results.json``, ``OUT/results.md``, ``OUT/pretraining.png`` and the pretrained encoder's
weights (``OUT/encoder.weights.h5``, after every epoch). ``report`` redraws the tables and the
figure from a ``results.json``.

A device call runs 10 minutes at most, so a session splits the work, copying one call's ``OUT``
into ``.gpu/`` for the next. First pretraining alone (``--no-finetune``), with a planned length
(``--pretrain-epochs``: the learning rate falls linearly to 0 at its end; ``--pretrain-minutes``
still stops it). Then fine-tuning alone from its weights (``--init-weights``,
``--pretrain-minutes 0``), with the earlier call's pretraining rows carried into the results
(``--pretrain-results``), the pretrained encoder only (``--no-scratch``) and BERT's fine-tuning
schedule (``--finetune-schedule linear``). A further pretraining call can go on from
``--init-weights`` with another ``--seed`` (the MLM head and the optimizer start afresh)::

    KERAS_BACKEND=jax python experiments/gpu_pretrain.py run .gpu "$OUT" --no-finetune \\
        --pretrain-epochs 30 --pretrain-minutes 8 --warmup 1000
    KERAS_BACKEND=jax python experiments/gpu_pretrain.py run .gpu "$OUT" --pretrain-minutes 0 \\
        --init-weights .gpu/encoder.weights.h5 --pretrain-results .gpu/results.json \\
        --no-scratch --finetune-schedule linear --pretrained-lrs 2e-4 3e-4 5e-4 --max-epochs 4

Usage::

    TFDS_DATA_DIR=../shared/tensorflow_datasets python experiments/gpu_pretrain_host.py prepare .gpu
    KERAS_BACKEND=jax python experiments/gpu_pretrain.py run .gpu "$OUT" ...  # the calls above
    python experiments/gpu_pretrain.py report "$OUT/results.json" results.md pretraining.png
    python experiments/gpu_pretrain_host.py export "$OUT/results.json" "$OUT/encoder.weights.h5" .gpu

The figures of 2026-11-22 (H100, 10 minutes of pretraining): README "Self-pretraining on a
GPU", ``experiments/gpu_pretrain_results.md`` and ``docs/gpu-pretraining.png``.
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings
from pathlib import Path

import numpy as np

warnings.filterwarnings("ignore", message="Explicitly requested dtype")  # int64 ids on JAX


class Reviews:
    """Reviews as a list of id arrays (no padding) and their labels."""

    def __init__(self, tokens: np.ndarray, lengths: np.ndarray, labels: np.ndarray):
        self.rows = np.split(tokens.astype(np.int32), np.cumsum(lengths)[:-1])
        self.labels = labels.astype(np.int32)

    @classmethod
    def load(cls, ids, name: str) -> Reviews:
        return cls(ids[f"{name}_tokens"], ids[f"{name}_lengths"], ids[f"{name}_labels"])

    def __add__(self, other: Reviews) -> Reviews:
        joined = Reviews.__new__(Reviews)
        joined.rows = self.rows + other.rows
        joined.labels = np.concatenate([self.labels, other.labels])
        return joined

    def batches(self, batch_size: int, rng: np.random.Generator | None, bucket: int):
        """(ids (B, T), labels, n): batches of ``batch_size`` with T a multiple of ``bucket``,
        so that XLA compiles few shapes. Shuffled with ``rng`` (the last partial batch is
        dropped); in order without it, the last batch filled with all-padding rows (the
        first ``n`` rows are real). Length-sorted within chunks of 50 batches: little padding."""
        order = np.arange(len(self.rows)) if rng is None else rng.permutation(len(self.rows))
        if rng is not None:
            order = order[: len(order) - len(order) % batch_size]
        chunk = batch_size * 50
        for start in range(0, len(order), chunk):
            part = order[start : start + chunk]
            part = part[np.argsort([len(self.rows[i]) for i in part], kind="stable")]
            groups = [part[i : i + batch_size] for i in range(0, len(part), batch_size)]
            if rng is not None:
                rng.shuffle(groups)
            for group in groups:
                width = bucket * math.ceil(max(len(self.rows[i]) for i in group) / bucket)
                ids = np.zeros((batch_size, width), np.int32)
                labels = np.zeros(batch_size, np.int32)
                for j, i in enumerate(group):
                    ids[j, : len(self.rows[i])] = self.rows[i]
                labels[: len(group)] = self.labels[group]
                yield ids, labels, len(group)


def mlm_mask(ids: np.ndarray, rng: np.random.Generator, mask_id: int, rate: float = 0.15):
    """NumPy twin of :func:`classifier.pretraining.masking.mlm_mask` (same rule, another random stream):
    per review k = min(n, max(1, round(rate n))) real tokens chosen; of them 80% -> [MASK],
    10% -> a random word id in [2, mask_id), 10% kept. Returns the same four arrays."""
    batch, length = ids.shape
    real = ids != 0
    counts = real.sum(1)
    chosen_count = np.minimum(counts, np.maximum(np.rint(rate * counts).astype(int), 1))
    slots = max(1, math.ceil(rate * length))
    scores = np.where(real, rng.random((batch, length)), 2.0)
    order = np.argsort(scores, axis=1, kind="stable")[:, :slots]
    chosen = np.arange(slots)[None, :] < chosen_count[:, None]
    positions = np.where(chosen, order, 0)
    labels = np.where(chosen, np.take_along_axis(ids, order, axis=1), 0)
    action = rng.random((batch, slots))
    random_words = rng.integers(2, mask_id, (batch, slots))
    replaced = np.where(action < 0.8, mask_id, np.where(action < 0.9, random_words, labels))
    masked = ids.copy()
    rows, cols = np.nonzero(chosen)
    masked[rows, order[rows, cols]] = replaced[rows, cols]
    return masked, positions.astype(np.int32), labels.astype(np.int32), chosen.astype("float32")


def model_config(args, dropout: float):
    from classifier.config.schema import ModelConfig

    return ModelConfig(
        variant="encoder",
        embed_dim=args.embed_dim,
        num_heads=args.num_heads,
        ff_dim=args.ff_dim,
        num_layers=args.num_layers,
        dropout=dropout,
        position="sinusoidal",
    )


def warmup_schedule(peak: float, warmup: int, total: int | None = None):
    """Linear warm-up to ``peak`` over ``warmup`` steps; then, with no planned length
    (``total`` None, pretraining stops on a time budget), peak * sqrt(warmup / step); with
    one, a straight line down to 0 at step ``total`` (BERT's fine-tuning schedule).

    >>> from keras import ops
    >>> line = warmup_schedule(1.0, 10, total=110)
    >>> [round(float(ops.convert_to_numpy(line(s))), 3) for s in (0, 9, 59, 109, 200)]
    [0.1, 1.0, 0.5, 0.0, 0.0]
    >>> root = warmup_schedule(1.0, 10)
    >>> round(float(ops.convert_to_numpy(root(39))), 3)
    0.5
    """
    import keras
    from keras import ops

    if total is not None and not 0 < warmup < total:
        raise ValueError(f"the warm-up ({warmup} steps) must end before step {total}")

    class Schedule(keras.optimizers.schedules.LearningRateSchedule):
        def __call__(self, step):
            step = ops.cast(step, "float32") + 1.0
            if total is None:
                after = ops.sqrt(warmup / step)
            else:
                after = ops.maximum(0.0, (total - step) / (total - warmup))
            return peak * ops.minimum(step / warmup, after)

    return Schedule()


def pretrain(args, ids, vocab_size: int, out: Path) -> tuple[object, list[dict]]:
    """MLM pretraining for ``args.pretrain_epochs`` or ``args.pretrain_minutes``, whichever
    ends first; the encoder and per-epoch figures (``steps``: the batches an epoch trained,
    fewer than the others in the one the time budget cut short)."""
    import keras

    from classifier.models.pretraining import MaskedLanguageModel

    keras.utils.set_random_seed(args.seed)
    mask_id = vocab_size - 1
    data, held_out = Reviews.load(ids, "pretrain"), Reviews.load(ids, "held_out")
    model = MaskedLanguageModel.from_model_config(
        model_config(args, 0.1), vocab_size, args.sequence_length
    )
    if args.init_weights:  # go on from an earlier run's encoder; head and optimizer afresh
        model.encoder.load_weights(args.init_weights)
    steps = len(data.rows) // args.pretrain_batch
    planned_steps = steps * args.pretrain_epochs if args.pretrain_epochs else None
    model.compile(
        optimizer=keras.optimizers.AdamW(
            warmup_schedule(args.pretrain_lr, args.warmup, planned_steps),
            weight_decay=0.01,
            clipnorm=1.0,
        ),
        loss=keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction="mean_with_sample_weight"
        ),
        weighted_metrics=[keras.metrics.SparseCategoricalAccuracy(name="acc")],
    )
    # Training masks and order from the seed (a run going on from another takes a new one);
    # the held-out masks the same in every run and epoch, so that their figures compare.
    rng, fixed = np.random.default_rng(1 + args.seed), np.random.default_rng(2)
    held = []
    for x, _, _ in held_out.batches(256, None, args.bucket):
        masked, positions, labels, weights = mlm_mask(x, fixed, mask_id)
        held.append(((masked, positions), labels, weights))
    heldout_tokens = sum(w.sum() for _, _, w in held)  # the predicted ones
    history, start, epoch = [], time.perf_counter(), 0
    while time.perf_counter() - start < args.pretrain_minutes * 60 and epoch < (
        args.pretrain_epochs or math.inf
    ):
        epoch += 1
        tick, losses = time.perf_counter(), []
        for x, _, _ in data.batches(args.pretrain_batch, rng, args.bucket):
            masked, positions, labels, weights = mlm_mask(x, rng, mask_id)
            losses.append(model.train_on_batch((masked, positions), labels, weights)[0])
            if time.perf_counter() - start > args.pretrain_minutes * 60:
                break
        sums = np.zeros(2)
        for inputs, labels, weights in held:
            n = weights.sum()
            loss, acc = model.test_on_batch(inputs, labels, weights)
            sums += np.array([loss, acc]) * n
        row = {
            "epoch": epoch,
            "seconds": round(time.perf_counter() - tick, 1),
            "steps": len(losses),
            "train_loss": float(np.mean(losses)),
            "heldout_loss": float(sums[0] / heldout_tokens),
            "heldout_masked_accuracy": float(sums[1] / heldout_tokens),
        }
        history.append(row)
        print("pretrain", json.dumps(row), flush=True)
        model.encoder.save_weights(out / "encoder.weights.h5")
    return model.encoder, history


def fine_tune(args, splits, vocab_size: int, encoder, lr: float, seed: int, refit_epochs=None):
    """One classifier run on ``splits`` (``train``, ``validation``, ``test`` :class:`Reviews`):
    select the epoch count on validation (``refit_epochs`` None), or train on train +
    validation for ``refit_epochs`` and evaluate on test."""
    import keras

    from classifier.models.classifier import build_classifier

    keras.utils.set_random_seed(seed)
    model = build_classifier(model_config(args, args.dropout), vocab_size, args.sequence_length)
    if encoder is not None:  # as PretrainedEncoder.copy_into, whose module needs MLflow
        for name in ("embedding", "encoder"):
            model.get_layer(name).set_weights(encoder.get_layer(name).get_weights())
    train, validation = splits["train"], splits["validation"]
    rng = np.random.default_rng(seed)
    if refit_epochs is not None:
        train, validation = train + validation, splits["test"]
    if args.finetune_schedule == "linear":  # down to 0 at max_epochs; a refit stops part-way
        planned_steps = args.max_epochs * (len(train.rows) // args.batch)
        rate = warmup_schedule(lr, max(1, planned_steps // 10), planned_steps)
    else:
        rate = lr
    model.compile(
        optimizer=keras.optimizers.AdamW(rate, weight_decay=0.01, clipnorm=1.0),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    scores, best = [], (0.0, 0)
    for epoch in range(1, (refit_epochs or args.max_epochs) + 1):
        for x, y, _ in train.batches(args.batch, rng, args.sequence_length):
            model.train_on_batch(x, y)
        if refit_epochs is not None and epoch < refit_epochs:
            continue
        correct = sum(
            int((model.predict_on_batch(x)[:n].argmax(-1) == y[:n]).sum())
            for x, y, n in validation.batches(256, None, args.sequence_length)
        )
        scores.append(correct / len(validation.labels))
        if scores[-1] > best[0]:
            best = (scores[-1], epoch)
        elif refit_epochs is None and epoch - best[1] >= args.patience:
            break
    return {"seed": seed, "lr": lr, "scores": scores, "best": best[0], "epochs": best[1]}


def run(args) -> None:
    ids = np.load(Path(args.ids) / "ids.npz")
    vocab_size = len((Path(args.ids) / "vocabulary.txt").read_text("utf-8").split("\n"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    import keras

    print(f"Keras {keras.__version__}, backend {keras.backend.backend()}", flush=True)
    tick = time.perf_counter()
    encoder, history = pretrain(args, ids, vocab_size, out)
    results = {"args": vars(args), "pretrain": history, "pretrain_s": time.perf_counter() - tick}
    if args.pretrain_results:  # an earlier call's pretraining comes first
        earlier = json.loads(Path(args.pretrain_results).read_text("utf-8"))
        done = len(earlier["pretrain"])
        results["pretrain"] = earlier["pretrain"] + [
            {**row, "epoch": row["epoch"] + done} for row in history
        ]
        results["pretrain_s"] += earlier["pretrain_s"]
        results["earlier_args"] = earlier.get("earlier_args", []) + [earlier["args"]]
    (out / "results.json").write_text(json.dumps(results, indent=1), "utf-8")
    arms = ()
    if args.finetune:
        splits = {name: Reviews.load(ids, name) for name in ("train", "validation", "test")}
        arms = (("pretrained", encoder),) + ((("scratch", None),) if args.scratch else ())
    for name, start in arms:
        rates = args.pretrained_lrs if start is not None else args.scratch_lrs
        choices = [fine_tune(args, splits, vocab_size, start, lr, 1) for lr in rates]
        chosen = max(choices, key=lambda c: c["best"])
        print(name, "choice", json.dumps(choices), flush=True)
        tests = []
        for seed in (1, 2, 3):
            picked = (
                chosen
                if seed == 1
                else fine_tune(args, splits, vocab_size, start, chosen["lr"], seed)
            )
            refit = fine_tune(
                args, splits, vocab_size, start, chosen["lr"], seed, refit_epochs=picked["epochs"]
            )
            tests.append(
                {
                    "seed": seed,
                    "val": picked["best"],
                    "epochs": picked["epochs"],
                    "test": refit["scores"][-1],
                }
            )
            print(name, "seed", json.dumps(tests[-1]), flush=True)
        accuracy = [t["test"] for t in tests]
        results[name] = {
            "choices": choices,
            "lr": chosen["lr"],
            "seeds": tests,
            "test_mean": float(np.mean(accuracy)),
            "test_std": float(np.std(accuracy)),
        }
        (out / "results.json").write_text(json.dumps(results, indent=1), "utf-8")
    print(report(results, out / "results.md", out / "pretraining.png"))


def report(results: dict, markdown: Path, figure: Path) -> str:
    """The tables of a ``results.json`` as markdown (written to ``markdown``, and returned),
    and the pretraining curves as a PNG."""
    from classifier.plots.runs import plot_training_curves

    if results["pretrain"]:
        rows = results["pretrain"]
        plot_training_curves(
            figure,
            {key: [row[key] for row in rows] for key in rows[0]},
            splits=(("train", "training"), ("heldout", "held-out")),
            metrics=("loss", "masked_accuracy"),
        )
    a = results["args"]
    lines = [
        f"### MLM pretraining: {a['embed_dim']} wide, {a['num_heads']} heads, feed-forward "
        f"{a['ff_dim']}, {a['num_layers']} layers; {results['pretrain_s'] / 60:.1f} min"
        f" in {len(results.get('earlier_args', [])) + 1} call(s)",
        "",
        "| epoch | seconds | training loss | held-out loss | held-out masked-token accuracy |",
        "|---:|---:|---:|---:|---:|",
    ]
    for row in results["pretrain"]:
        lines.append(
            f"| {row['epoch']} | {row['seconds']:.1f} | {row['train_loss']:.4f} | "
            f"{row['heldout_loss']:.4f} | {row['heldout_masked_accuracy']:.4f} |"
        )
    arms = [name for name in ("pretrained", "scratch") if name in results]
    if arms:  # none after --no-finetune: the pretraining table alone
        lines += [
            "",
            "### Fine-tuning: learning rate and epochs chosen on validation, then refit, 3 seeds",
            "",
            "| encoder | learning rate: best val acc (seed 1) | seed | best val acc | epochs | "
            "test acc (refit) |",
            "|---|---|---:|---:|---:|---:|",
        ]
    for name in arms:
        r = results[name]
        tried = ", ".join(f"{c['lr']:g}: {c['best']:.4f}" for c in r["choices"])
        for t in r["seeds"]:
            lines.append(
                f"| {name} | {tried} | {t['seed']} | {t['val']:.4f} | {t['epochs']} | "
                f"{t['test']:.4f} |"
            )
        lines.append(
            f"| {name} | | mean ± std | | | **{r['test_mean']:.4f} ± {r['test_std']:.4f}** |"
        )
    text = "\n".join(lines) + "\n"
    markdown.write_text(text, "utf-8")
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    go = sub.add_parser("run", help="pretrain, then fine-tune 3 seeds from it and from scratch")
    go.add_argument("ids")
    go.add_argument("out")
    go.add_argument("--pretrain-minutes", type=float, default=5.0)
    go.add_argument("--pretrain-batch", type=int, default=128)
    go.add_argument("--pretrain-lr", type=float, default=1e-3)
    go.add_argument("--warmup", type=int, default=1000, help="pretraining warm-up steps")
    go.add_argument(
        "--pretrain-epochs",
        type=int,
        help="a planned length: the learning rate falls linearly to 0 at its end "
        "(default: none, 1/sqrt(step) until --pretrain-minutes)",
    )
    go.add_argument("--init-weights", help="an encoder.weights.h5 to go on pretraining from")
    go.add_argument(
        "--seed", type=int, default=0, help="pretraining masks and order (going on: not 0)"
    )
    go.add_argument(
        "--pretrain-results",
        help="an earlier call's results.json: its pretraining rows come first in this one's",
    )
    go.add_argument("--no-finetune", dest="finetune", action="store_false", help="pretrain only")
    go.add_argument("--embed-dim", type=int, default=128)
    go.add_argument("--num-heads", type=int, default=4)
    go.add_argument("--ff-dim", type=int, default=512)
    go.add_argument("--num-layers", type=int, default=4)
    go.add_argument("--sequence-length", type=int, default=512)
    go.add_argument("--bucket", type=int, default=256, help="pretraining pads to a multiple")
    go.add_argument("--dropout", type=float, default=0.1)
    go.add_argument("--batch", type=int, default=64)
    go.add_argument("--max-epochs", type=int, default=6)
    go.add_argument("--patience", type=int, default=2)
    go.add_argument("--pretrained-lrs", type=float, nargs="+", default=[3e-5, 1e-4, 3e-4])
    go.add_argument("--scratch-lrs", type=float, nargs="+", default=[1e-4, 3e-4, 1e-3])
    go.add_argument(
        "--no-scratch", dest="scratch", action="store_false", help="fine-tune the pretrained only"
    )
    go.add_argument(
        "--finetune-schedule",
        choices=("constant", "linear"),
        default="constant",
        help="linear: 10%% warm-up, then down to 0 at --max-epochs",
    )
    show = sub.add_parser("report", help="a results.json as markdown tables and a curves PNG")
    show.add_argument("results", type=Path)
    show.add_argument("markdown", type=Path)
    show.add_argument("figure", type=Path)
    args = parser.parse_args()
    if args.command == "report":
        print(report(json.loads(args.results.read_text("utf-8")), args.markdown, args.figure))
    elif args.pretrain_minutes <= 0 and not args.init_weights:
        parser.error("--pretrain-minutes 0 fine-tunes an encoder: name it with --init-weights")
    else:
        run(args)


if __name__ == "__main__":
    main()

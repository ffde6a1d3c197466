"""Forward + backward time of our MultiHeadAttention against keras.layers.MultiHeadAttention.

Both layers get the same weights and inputs; each step is a compiled ``tf.function`` computing the
output, a scalar loss and the gradients of every weight. Steps alternate between the two layers
(interleaved, same process) and the table reports the median step time and the ratio
reference/ours (above 1.0: ours is faster).

Usage:
    python benchmarks/attention_kernels.py            # 20 timed steps per shape
    python benchmarks/attention_kernels.py --quick    # 5 timed steps per shape
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from classifier.layers import MultiHeadAttention  # noqa: E402

SHAPES = [(64, 256, 64, 4), (8, 1024, 64, 4)]  # (B, T, d, h)


def copy_weights(ours: MultiHeadAttention, reference: keras.layers.MultiHeadAttention) -> None:
    """Give the reference layer our weights (kernels reshaped to (d, h, d_k) and (h, d_k, d))."""
    h, d_k = ours.num_heads, ours.depth
    pairs = [
        (ours.query_dense, reference._query_dense),
        (ours.key_dense, reference._key_dense),
        (ours.value_dense, reference._value_dense),
    ]
    for mine, theirs in pairs:
        kernel, bias = (keras.ops.convert_to_numpy(w) for w in mine.weights)
        theirs.set_weights([kernel.reshape(-1, h, d_k), bias.reshape(h, d_k)])
    kernel, bias = (keras.ops.convert_to_numpy(w) for w in ours.output_dense.weights)
    reference._output_dense.set_weights([kernel.reshape(h, d_k, -1), bias])


def make_step(layer):
    @tf.function
    def step(x, mask):
        with tf.GradientTape() as tape:
            out = layer(x, x, attention_mask=mask)
            loss = tf.reduce_mean(tf.square(out))
        return loss, tape.gradient(loss, layer.trainable_weights)

    return step


def time_shape(batch: int, length: int, d_model: int, heads: int, steps: int) -> dict:
    rng = np.random.default_rng(0)
    x = tf.constant(rng.normal(size=(batch, length, d_model)).astype("float32"))
    lengths = rng.integers(length // 4, length + 1, size=batch)
    keep = np.arange(length)[None, :] < lengths[:, None]
    mask = tf.constant(keep[:, None, :] & keep[:, :, None])  # (B, T, T) padding mask
    ours = MultiHeadAttention(d_model, heads)
    reference = keras.layers.MultiHeadAttention(heads, d_model // heads)
    ours(x, x, attention_mask=mask)
    reference(x, x, attention_mask=mask)
    copy_weights(ours, reference)
    # Compare real query positions only: a padded query attends to nothing in ours (output 0)
    # and uniformly in Keras'.
    gap = np.abs(ours(x, x, attention_mask=mask) - reference(x, x, attention_mask=mask))
    difference = float(np.max(gap[keep]))
    runs = {"ours": make_step(ours), "keras": make_step(reference)}
    times: dict[str, list[float]] = {name: [] for name in runs}
    for step in runs.values():  # trace and warm up
        step(x, mask)
    for _ in range(steps):
        for name, step in runs.items():  # interleaved
            started = time.perf_counter()
            loss, grads = step(x, mask)
            _ = [g.numpy() for g in grads]  # wait for the result
            times[name].append(time.perf_counter() - started)
    ours_ms = statistics.median(times["ours"]) * 1e3
    keras_ms = statistics.median(times["keras"]) * 1e3
    return {
        "shape": f"B={batch}, T={length}, d={d_model}, h={heads}",
        "ours_ms": ours_ms,
        "keras_ms": keras_ms,
        "ratio": keras_ms / ours_ms,
        "max_diff": difference,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 timed steps per shape")
    parser.add_argument("--steps", type=int, default=None, help="timed steps per shape")
    args = parser.parse_args()
    steps = args.steps or (5 if args.quick else 20)
    keras.utils.set_random_seed(0)
    rows = [time_shape(*shape, steps=steps) for shape in SHAPES]
    print(
        f"### Attention forward + backward (median of {steps} steps; "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, TF {tf.__version__})\n"
    )
    print("| shape | ours (ms) | keras MHA (ms) | keras / ours | max abs diff (forward) |")
    print("|---|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['shape']} | {row['ours_ms']:.1f} | {row['keras_ms']:.1f} | "
            f"{row['ratio']:.2f}x | {row['max_diff']:.1e} |"
        )


if __name__ == "__main__":
    main()

"""Training steps of ``make train``'s model with glibc's default malloc settings and with
``keep_freed_memory`` (what every ``classify`` command that imports TensorFlow sets).

Each pass is a fresh process (malloc settings hold for a whole process): it builds the model of
``configs/train.yaml`` (``nbow``, 4.2 million hashed n-gram rows), compiles it as ``classify
train`` does, and runs training steps on batches of 256 random token ids whose lengths cycle
through 100 to 900 words (IMDB reviews run from 10 to 2,500; the pipeline pads each batch to its
longest review). Steps 1 to 6 trace the graphs and are not timed. Passes alternate (default,
keep, default, ...); the table gives the median step time, and the minor page faults and
kernel (sys) time per step, over the passes.

Usage:
    python benchmarks/allocator.py            # 3 passes of each, 60 timed steps (about 3 minutes)
    python benchmarks/allocator.py --quick    # 1 pass of each, 24 timed steps
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from machine import cpu_model

ROOT = Path(__file__).resolve().parents[1]
LENGTHS = (100, 150, 200, 300, 500, 900)
BATCH = 256
WARM_UP = len(LENGTHS)


def child(mode: str, steps: int) -> None:
    """One pass: print {"step_s": [...], "faults": n, "sys_s": s} for the timed steps."""
    from classifier.cli.startup import keep_freed_memory

    # As import_tensorflow does for every classify command: before TensorFlow is imported.
    if mode == "keep" and not keep_freed_memory():
        raise SystemExit("keep_freed_memory() did not apply here (not glibc, or MALLOC_* set)")
    import numpy as np

    from classifier.config.schema import load_config
    from classifier.models.classifier import build_classifier
    from classifier.training.build import optimizer

    cfg = load_config(ROOT / "configs" / "train.yaml")
    model = build_classifier(cfg.model, cfg.data.vocab_size, cfg.data.sequence_length)
    model.compile(optimizer=optimizer(cfg.train), loss="sparse_categorical_crossentropy")
    rng = np.random.default_rng(0)
    batches = [
        (rng.integers(2, cfg.data.vocab_size, (BATCH, length)), rng.integers(0, 2, BATCH))
        for length in LENGTHS
    ]
    for ids, labels in batches:  # one graph per length
        model.train_on_batch(ids, labels)
    times = []
    before = resource.getrusage(resource.RUSAGE_SELF)
    for step in range(steps):
        ids, labels = batches[step % len(batches)]
        started = time.perf_counter()
        model.train_on_batch(ids, labels)
        times.append(time.perf_counter() - started)
    after = resource.getrusage(resource.RUSAGE_SELF)
    print(
        json.dumps(
            {
                "step_s": times,
                "faults": after.ru_minflt - before.ru_minflt,
                "sys_s": after.ru_stime - before.ru_stime,
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 pass of each, 24 timed steps")
    parser.add_argument("--child", choices=["default", "keep"], help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, default=60, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.steps)
        return
    passes, steps = (1, 24) if args.quick else (3, 60)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    results: dict[str, list[dict]] = {"default": [], "keep": []}
    for _ in range(passes):
        for mode in results:
            command = [sys.executable, __file__, "--child", mode, "--steps", str(steps)]
            out = subprocess.run(command, env=env, capture_output=True, text=True, cwd=ROOT)
            if out.returncode:
                raise SystemExit(out.stderr[-3000:])
            results[mode].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print("## Allocator: training steps of `nbow` (configs/train.yaml), batches of 256")
    print()
    print(f"{cpu_model()}, {os.cpu_count()} cores; {passes} passes of {steps} steps each")
    print()
    print(
        "| malloc | median step (ms) | minor faults per step | sys ms per step | time vs default |"
    )
    print("|---|---:|---:|---:|---:|")
    medians = {}
    for mode, runs in results.items():
        medians[mode] = statistics.median(t for run in runs for t in run["step_s"])
        faults = statistics.median(run["faults"] for run in runs) / steps
        sys_ms = statistics.median(run["sys_s"] for run in runs) / steps * 1000
        name = "glibc default" if mode == "default" else "`keep_freed_memory`"
        ratio = medians[mode] / medians["default"]
        print(
            f"| {name} | {medians[mode] * 1000:.1f} | {faults:,.0f} | {sys_ms:.1f} | {ratio:.2f}x |"
        )


if __name__ == "__main__":
    main()

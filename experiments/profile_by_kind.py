"""Where a test process's CPU goes, by kind of work, from a py-spy profile (issue #44).

py-spy (``pip install py-spy``, not a dependency of the project) samples a process's Python
stacks; this script reads its raw output (one line per stack: frames joined by ``;``, then a
count) and puts each sample in the first kind below whose pattern one of its frames matches:
an import, the LiteRT converter, tracing a ``tf.function`` (Keras' layer calls and TensorFlow's
op creation while tracing included), Keras saving, matplotlib, MLflow, TFDS, ``tf.data``,
TensorFlow running ops, Keras outside tracing, else "other".

Usage:
    py-spy record -r 100 -f raw -o profile.txt -- \\
        python -m pytest -p no:xdist -p no:randomly tests/training/test_train.py -q
    python experiments/profile_by_kind.py profile.txt --rate 100
"""

from __future__ import annotations

import argparse
import re
from collections import Counter

#: (kind, a pattern of a frame): the first kind that matches a sample's stack takes it.
KINDS = [
    ("import", r"_find_and_load"),
    ("LiteRT conversion", r"lite\.py|convert_phase|TFLiteConverter"),
    ("LiteRT interpreter", r"interpreter\.py"),
    (
        "tracing a tf.function",
        r"func_graph_from_py_func|_maybe_define_function|trace_function|get_concrete_function",
    ),
    ("Keras saving and loading", r"saving_lib|saving_api"),
    ("matplotlib", r"matplotlib"),
    ("MLflow", r"mlflow|sqlalchemy"),
    ("TFDS", r"tensorflow_datasets"),
    ("tf.data", r"data/ops/"),
    ("TensorFlow running ops", r"quick_execute|_call_flat|call_function|execute\.py"),
    ("Keras, eager", r"keras/src"),
]


def by_kind(lines) -> tuple[Counter, int]:
    """Samples per kind, and all samples, of py-spy's raw lines."""
    counts: Counter = Counter()
    total = 0
    patterns = [(kind, re.compile(pattern)) for kind, pattern in KINDS]
    for line in lines:
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack:
            continue
        samples = int(count)
        total += samples
        kind = next((kind for kind, pattern in patterns if pattern.search(stack)), "other")
        counts[kind] += samples
    return counts, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("profile", help="py-spy's output of `record -f raw`")
    parser.add_argument("--rate", type=float, default=100, help="py-spy's samples a second")
    args = parser.parse_args()
    with open(args.profile, encoding="utf-8") as lines:
        counts, total = by_kind(lines)
    print("| kind of work | seconds | share |\n|---|---:|---:|")
    for kind, samples in counts.most_common():
        print(f"| {kind} | {samples / args.rate:.1f} | {samples / total:.0%} |")
    print(f"| all | {total / args.rate:.1f} | 100% |")


if __name__ == "__main__":
    main()

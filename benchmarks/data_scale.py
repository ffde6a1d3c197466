"""One epoch of ``nbow`` (``make train``'s recipe) from a labelled CSV of 25,000, 100,000 and
1,000,000 reviews beside the same recipe on the TFDS copy of IMDB: rows per second and peak
memory, each case in a process of its own.

The CSVs are made from the 50,000 labelled IMDB reviews (TFDS ``train`` then ``test``), in that
order and repeated as often as a size needs, with ``text`` and ``label`` (``negative`` or
``positive``) columns; they are written once into ``--folder`` and reused. The CSV of 25,000 is
the ``train`` split alone, so that it and the TFDS case both train on 20,000 IMDB training
reviews (validation and test 2,500 each; the CSVs' are stratified 10% shares of the file).

Each case times what one epoch of a run costs, phase by phase (``classify train`` runs the
same code): reading and checking the source, the vocabulary, the ids of every split (vectorized
once and cached: on disk for a file, in memory for IMDB), ``nbow``'s Naive Bayes counts, and the
epoch itself (no validation pass). Rows per second are training rows over the sum of the phases.
Peak RSS is the child's ``ru_maxrss``.

Usage:
    python benchmarks/data_scale.py                  # 25,000, 100,000 and 1,000,000 rows (~40 min)
    python benchmarks/data_scale.py --quick          # 25,000 rows beside TFDS (a few minutes)
    python benchmarks/data_scale.py --rows 100000 --folder /tmp/scale
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine import cpu_model

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "configs" / "train.yaml"
LABEL_NAMES = ("negative", "positive")
PHASES = ("read", "vocabulary", "ids", "nb_counts", "epoch")
HEADERS = ("read+check", "vocabulary", "ids cached", "NB counts", "epoch")


def write_csv(path: Path, rows: int, data_dir: str | None) -> None:
    """``rows`` labelled IMDB reviews as a CSV: train then test, repeated as needed."""
    if path.exists():
        return
    sys.path.insert(0, str(ROOT))
    from classifier.cli.startup import import_tensorflow

    import_tensorflow()  # without TensorFlow's start-up lines
    from baseline_sklearn import reviews as tfds_reviews

    splits = ["train"] if rows <= 25_000 else ["train", "test"]
    reviews = []
    for split in splits:
        texts, labels = tfds_reviews(split, data_dir)
        reviews += [(text, LABEL_NAMES[label]) for text, label in zip(texts, labels, strict=True)]
    partial = path.with_suffix(".partial")
    with partial.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(["text", "label"])
        for row in range(rows):
            writer.writerow(reviews[row % len(reviews)])
    partial.rename(path)


def child(source: str | None) -> dict:
    """Run the phases of one epoch in this process; their seconds and the split sizes."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sys.path.insert(0, str(ROOT))
    from classifier.cli.startup import import_tensorflow

    import_tensorflow()
    from classifier.config.schema import load_config
    from classifier.data.pipeline import build_vectorizer, load_raw_splits, make_datasets
    from classifier.training.build import new_model

    sets = ["train.epochs=1", "train.refit=false"]
    if source is None:
        sets += ["data.train_size=20000", "data.val_size=2500", "data.test_size=2500"]
    else:
        sets += [f"data.source={source}"]
    cfg = load_config(str(RECIPE), sets)
    seconds = {}
    start = time.perf_counter()
    raw = load_raw_splits(cfg.data)
    sizes = {name: int(getattr(raw, name).cardinality()) for name in ("train", "validation")}
    seconds["read"] = time.perf_counter() - start
    start = time.perf_counter()
    vectorizer = build_vectorizer(cfg.data, raw.train)
    seconds["vocabulary"] = time.perf_counter() - start
    start = time.perf_counter()
    data = make_datasets(cfg.data, raw, vectorizer, seed=cfg.train.seed)  # counts, caches
    seconds["ids"] = time.perf_counter() - start
    start = time.perf_counter()
    model = new_model(cfg, data.train, None, len(raw.labels), vectorizer.get_vocabulary())
    seconds["nb_counts"] = time.perf_counter() - start
    start = time.perf_counter()
    model.fit(data.train, epochs=1, shuffle=False, verbose=0)
    seconds["epoch"] = time.perf_counter() - start
    return {"seconds": seconds, "sizes": sizes}


def measure(source: str | None) -> dict:
    """:func:`child` in a process of its own, and that process's peak RSS (MiB)."""
    command = [sys.executable, __file__, "--child", source or "tfds"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    if status != 0:
        sys.exit(f"data_scale: the case {source or 'tfds'} failed (status {status})")
    return {**json.loads(output), "rss_mib": usage.ru_maxrss / 1024}


def table(cases: list[tuple[str, int | None, dict]]) -> list[str]:
    lines = [
        "| source | rows | training rows | "
        + " | ".join(f"{h} (s)" for h in HEADERS)
        + " | rows/s (epoch) | rows/s (all) | peak RSS (MiB) |",
        "|---|---:|---:|" + "---:|" * (len(HEADERS) + 3),
    ]
    for name, rows, result in cases:
        seconds, train = result["seconds"], result["sizes"]["train"]
        total = sum(seconds.values())
        lines.append(
            f"| {name} | {rows or train + 5000:,} | {train:,} | "
            + " | ".join(f"{seconds[p]:.1f}" for p in PHASES)
            + f" | {train / seconds['epoch']:,.0f} | {train / total:,.0f} "
            f"| {result['rss_mib']:,.0f} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default="25000,100000,1000000", help="CSV sizes, commas")
    parser.add_argument("--quick", action="store_true", help="25,000 rows beside TFDS only")
    parser.add_argument("--folder", help="where the CSVs are written and kept (default: a temp)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(None if args.child == "tfds" else args.child)))
        return
    data_dir = os.environ.get("TFDS_DATA_DIR")
    sizes = [25_000] if args.quick else [int(r) for r in args.rows.split(",")]
    folder = Path(args.folder or tempfile.mkdtemp(prefix="data-scale-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"## One epoch of nbow from a CSV, beside TFDS ({cpu_model()}, {os.cpu_count()} cores)")
    print()
    cases = [("TFDS imdb_reviews", None, measure(None))]
    for rows in sizes:
        path = folder / f"imdb-{rows}.csv"
        write_csv(path, rows, data_dir)
        cases.append((f"CSV ({path.stat().st_size / 2**20:,.0f} MiB)", rows, measure(str(path))))
    for line in table(cases):
        print(line)
    print()
    tfds_rate = _rate(cases[0][2])
    for _, rows, result in cases[1:]:
        print(
            f"CSV of {rows:,} rows: {_rate(result) / tfds_rate:.0%} of TFDS's rows/s (all phases)"
        )
    rss = {rows: result["rss_mib"] for _, rows, result in cases[1:]}
    if len(rss) > 1:
        low, high = min(rss), max(rss)
        print(
            f"peak RSS, {high:,} rows against {low:,}: {rss[high] / rss[low]:.2f}x "
            f"for {high / low:.0f}x the rows"
        )


def _rate(result: dict) -> float:
    return result["sizes"]["train"] / sum(result["seconds"].values())


if __name__ == "__main__":
    main()

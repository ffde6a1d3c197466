"""A user's labelled texts (``data.source``) as training, validation and test splits, planned
without TensorFlow: which rows of which file go to which split, and the class names.

One pass over each file (:func:`classifier.data.files.scan`) checks every row and counts the
labels before anything is trained or logged, so bad input is one line
(:class:`~classifier.errors.DataError`) and nothing half-made reaches MLflow. Then:

- the class names come from the training rows (``data.labels`` fixes their order; else
  integers in numeric order, else sorted), and are stored with the model;
- validation and test are their own files (``data.validation``, ``data.test``) or, where none
  is given, rows of the source chosen stratified (:func:`split_assignment`) by
  ``data.validation_fraction`` and ``data.test_fraction`` with a fixed seed: every run,
  whatever its ``train.seed``, splits a file the same way;
- a label in validation or test that training lacks is refused.

The texts themselves are read again, streamed, when a split is iterated
(:func:`classifier.data.pipeline.load_raw_splits`): a file larger than memory still trains.
Scans are cached per file (path, size and modification time) in the process, so checking a
config in the CLI and loading it for training read a file once.

Example (a CSV with ``text`` and ``label`` columns)::

    plan = plan_splits(DataConfig(source="reviews.csv"))
    plan.labels  # ('negative', 'neutral', 'positive')
    plan.sizes  # {'train': 8000, 'validation': 1000, 'test': 1000}
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from classifier.config.schema import DataConfig
from classifier.data import files, named
from classifier.data.tokenizer import standardize
from classifier.errors import DataError

SPLITS = ("train", "validation", "test")
#: The seed of the stratified split of one file: fixed, so that every run splits it alike.
SPLIT_SEED = 0
_TRAIN, _VALIDATION, _TEST = 0, 1, 2


@dataclass(frozen=True)
class Part:
    """The rows of one file that make one split: ``rows`` (a bool per row of the file) or every
    row (``rows`` None), and how many of each class it holds (in class order)."""

    name: str
    path: Path
    format: str
    rows: np.ndarray | None
    counts: tuple[int, ...]

    @property
    def size(self) -> int:
        return sum(self.counts)


@dataclass(frozen=True)
class Plan:
    """Where each split's rows come from, and the class names (index = label id)."""

    labels: tuple[str, ...]
    parts: dict[str, Part]
    text_field: str
    label_field: str

    @property
    def sizes(self) -> dict[str, int]:
        return {name: part.size for name, part in self.parts.items()}

    def examples(self, name: str) -> Iterator[tuple[str, int]]:
        """``(text, label id)`` of every row of split ``name``, in file order, streamed."""
        part = self.parts[name]
        ids = {label: index for index, label in enumerate(self.labels)}
        records = files.records(part.path, self.text_field, self.label_field)
        for row, record in enumerate(records):
            if part.rows is None or part.rows[row]:
                yield record.text, ids[record.label]


#: Rows within which training shuffles (the shuffle buffer of
#: :func:`classifier.data.batching.vectorize`); a file ordered by class over longer runs trains
#: on one class at a time.
SHUFFLE_WINDOW = 25_000
#: How far a window's share of a class may stray from the file's before that is called a run.
RUN_SHARE = 0.2


def ordered_by_class(plan: Plan, window: int = SHUFFLE_WINDOW) -> str | None:
    """A one-line note where the training rows come in runs of one class longer than training
    shuffles (some ``window`` of consecutive rows holds a class at a share more than
    :data:`RUN_SHARE` away from the whole file's), else None.

    Example::

        ordered_by_class(plan_splits(DataConfig(source="sorted.csv")))
        # 'sorted.csv: its training rows come in runs of one class (...); shuffle it first ...'
    """
    part = plan.parts["train"]
    if part.size <= window:
        return None
    codes = _scan(os.fspath(part.path), plan.text_field, plan.label_field).codes
    if part.rows is not None:
        codes = codes[part.rows]
    classes = int(codes.max()) + 1
    overall = np.bincount(codes, minlength=classes) / len(codes)
    for start in range(0, len(codes) - window + 1, window):
        share = np.bincount(codes[start : start + window], minlength=classes) / window
        if np.abs(share - overall).max() > RUN_SHARE:
            return (
                f"{part.path}: its training rows come in runs of one class (training rows "
                f"{start + 1:,} to {start + window:,} are {share.max():.0%} one class, all of "
                f"them {overall[share.argmax()]:.0%}); training shuffles {window:,} rows at a "
                "time, so shuffle the file first (shuf, or sort -R)"
            )
    return None


def split_files(cfg: DataConfig) -> dict[str, str | None]:
    """Where validation and test come from as whole files: ``data.validation`` and
    ``data.test``, else a TFDS data set's own split of that name; None where a share of
    ``data.source`` is carved instead.

    Example::

        split_files(DataConfig(source="tfds:imdb_reviews"))
        # {'validation': None, 'test': 'tfds:imdb_reviews:test'}
    """
    given = {"validation": cfg.validation, "test": cfg.test}
    if named.is_named(cfg.source):  # a TFDS data set's own validation and test splits
        given = {name: path or named.own_split(cfg.source, name) for name, path in given.items()}
    return given


def plan_splits(cfg: DataConfig) -> Plan:
    """Check ``cfg.source`` (and ``cfg.validation``, ``cfg.test``) and plan the splits.

    Raises:
        DataError: one line naming the file: missing, malformed, not UTF-8, without the text
            or label column, with empty texts or labels, one class only, or a label in
            validation or test that training lacks.
    """
    if cfg.source is None:
        raise ValueError("plan_splits is for data.source; the IMDB data has its own splits")
    fields = (cfg.text_field, cfg.label_field)
    source = _scan(cfg.source, *fields)
    given = split_files(cfg)
    carve_validation = cfg.validation_fraction if given["validation"] is None else 0.0
    carve_test = cfg.test_fraction if given["test"] is None else 0.0
    names = list(source.counts)
    assignment = split_assignment(
        source.codes, carve_validation, carve_test, SPLIT_SEED, names=names, where=cfg.source
    )
    training_counts = np.bincount(source.codes[assignment == _TRAIN], minlength=len(names))
    trained = {name: int(count) for name, count in zip(names, training_counts, strict=True)}
    present = {name: count for name, count in trained.items() if count}
    declared = cfg.labels
    if declared is None and named.is_named(cfg.source):  # TFDS's own class order
        kept = [
            name for name in named.class_order(cfg.source, cfg.label_field) or [] if name in present
        ]
        declared = ",".join(kept) if len(kept) >= 2 else None
    labels = files.class_names(present, declared, where=cfg.source)
    parts = {"train": _part("train", source, labels, assignment == _TRAIN)}
    for name, path, code in (
        ("validation", given["validation"], _VALIDATION),
        ("test", given["test"], _TEST),
    ):
        if path is None:
            parts[name] = _part(name, source, labels, assignment == code)
        else:
            scan = _scan(path, *fields)
            _check_known(scan, labels, name, cfg.source)
            parts[name] = _part(name, scan, labels, None)
    return Plan(labels, parts, *fields)


def split_assignment(
    codes: np.ndarray, validation: float, test: float, seed: int = 0,
    *, names: Sequence[str] | None = None, where: str = "",
) -> np.ndarray:  # fmt: skip
    """Each row's split as uint8: 0 train, 1 validation, 2 test. Stratified and exact: of a
    class of ``n`` rows, ``round(validation * n)`` go to validation and ``round(test * n)`` to
    test (Python's ``round``), picked by ``numpy.random.default_rng(seed)``: the same inputs
    give the same assignment. A DataError when a class would keep no training row (``names``,
    by code, and ``where`` name class and source); a ValueError for fractions out of range.

    Example:
        >>> split_assignment(np.array([0, 0, 0, 0, 1, 1, 1, 1]), 0.25, 0.25, seed=1).tolist()
        [1, 2, 0, 0, 2, 0, 0, 1]
    """
    if validation < 0 or test < 0 or validation + test >= 1:
        raise ValueError(f"fractions validation={validation}, test={test} leave no training rows")
    codes, rng = np.asarray(codes), np.random.default_rng(seed)
    assignment = np.zeros(len(codes), np.uint8)
    order = np.argsort(codes, kind="stable")
    classes, starts, sizes = np.unique(codes[order], return_index=True, return_counts=True)
    for code, start, n in zip(classes.tolist(), starts.tolist(), sizes.tolist(), strict=True):
        to_validation, to_test = round(validation * n), round(test * n)
        if to_validation + to_test >= n:
            label = str(code) if names is None else f"'{names[code]}'"
            raise DataError(
                f"{f'{where}: ' if where else ''}class {label} has {n} row{'s' * (n != 1)}: "
                f"{to_validation} for validation and {to_test} for test leave none for training; "
                f"add rows or lower data.validation_fraction or data.test_fraction"
            )
        rows = order[start : start + n][rng.permutation(n)]
        assignment[rows[:to_validation]] = 1
        assignment[rows[to_validation : to_validation + to_test]] = 2
    return assignment


def _part(name: str, scan: files.Scan, labels: tuple[str, ...], rows: np.ndarray | None) -> Part:
    """The split ``name`` of ``scan``'s file: its rows where ``rows`` holds (all if None)."""
    codes = scan.codes if rows is None else scan.codes[rows]
    found = np.bincount(codes, minlength=len(scan.counts))
    per_label = dict(zip(scan.counts, found.tolist(), strict=True))
    counts = tuple(per_label.get(label, 0) for label in labels)
    if rows is not None and rows.all():
        rows = None
    return Part(name, scan.path, scan.format, rows, counts)


def _check_known(scan: files.Scan, labels: tuple[str, ...], split: str, source: str) -> None:
    """Refuse labels of a validation or test file that the training rows lack."""
    unknown = [label for label in scan.counts if label not in labels]
    if unknown:
        shown = ", ".join(repr(label) for label in unknown[:5])
        raise DataError(
            f"{scan.path}: the {split} texts have label{'s' if len(unknown) > 1 else ''} "
            f"{shown} that the training texts ({source}) lack; the classes are " + ", ".join(labels)
        )


def _scan(path: str, text_field: str, label_field: str) -> files.Scan:
    """:func:`classifier.data.files.scan`, once per file as it is now (path, size, mtime)."""
    try:
        stat = os.stat(path)
    except OSError:
        return files.scan(path, text_field, label_field)  # raises its own one line
    key = (os.path.abspath(path), stat.st_size, stat.st_mtime_ns, text_field, label_field)
    return _cached_scan(*key)


@functools.lru_cache(maxsize=16)
def _cached_scan(path: str, size: int, mtime_ns: int, text_field: str, label_field: str):
    return files.scan(path, text_field, label_field)


def describe(cfg: DataConfig) -> str:
    """A printable summary of a labelled source: where each split comes from, its size and
    class balance, text lengths in words (as the models split them) and an example per class.
    Reads the files (streamed); imports no TensorFlow.

    Example::

        print(describe(DataConfig(source="../shared/data/sst5/train.csv",
                                  validation="../shared/data/sst5/dev.csv")))
    """
    plan = plan_splits(cfg)
    width = max(10, *(len(label) for label in plan.labels))
    header = f"{'split':<11}{'texts':>9}" + "".join(
        f"{label:>{width + 2}}" for label in plan.labels
    )
    header += f"{'words p50':>11}{'p90':>7}{'p99':>7}{'max':>7}"
    rows, examples = [header], {}
    for name, part in plan.parts.items():
        lengths = []
        for text, label in plan.examples(name):
            lengths.append(len(standardize(text).split()))
            if name == "train":
                examples.setdefault(label, text)
        p50, p90, p99 = np.percentile(lengths or [0], (50, 90, 99), method="nearest")
        shares = "".join(
            f"{f'{count:,} ({count / max(part.size, 1):.0%})':>{width + 2}}"
            for count in part.counts
        )
        rows.append(
            f"{name:<11}{part.size:>9,}{shares}{p50:>11}{p90:>7}{p99:>7}{max(lengths, default=0):>7}"
        )
    lines = [
        f"Labelled texts ({plan.parts['train'].format}), {len(plan.labels)} classes: "
        + ", ".join(plan.labels),
        _origins(cfg, plan),
        "",
        *rows,
        "",
        "An example of each class (training texts):",
    ]
    for index, label in enumerate(plan.labels):
        text = " ".join(examples.get(index, "").split())
        lines.append(f"  {label}: {text[:200]}{'...' if len(text) > 200 else ''}")
    return "\n".join(lines)


def _origins(cfg: DataConfig, plan: Plan) -> str:
    """Where each split comes from, on one line.

    Example::

        train, validation, test: 80%, 10%, 10% of reviews.csv, stratified by class
        train = train.csv; validation = dev.csv; test: 10% of train.csv, stratified by class
        test = tfds:imdb_reviews:test; validation: 10% of tfds:imdb_reviews, stratified by class
    """
    carved = [name for name, part in plan.parts.items() if part.rows is not None]
    share = {
        "train": 1.0 - sum(getattr(cfg, f"{name}_fraction") for name in carved if name != "train"),
        "validation": cfg.validation_fraction,
        "test": cfg.test_fraction,
    }
    if len(carved) == 3:
        shares = ", ".join(f"{share[name]:.0%}" for name in carved)
        return f"train, validation, test: {shares} of {cfg.source}, stratified by class"
    whole = [f"{name} = {part.path}" for name, part in plan.parts.items() if part.rows is None]
    cut = [name for name in carved if name != "train"]
    shares = ", ".join(f"{share[name]:.0%}" for name in cut)
    tail = f"; {' and '.join(cut)}: {shares} of {cfg.source}, stratified by class" if cut else ""
    return "; ".join(whole) + tail

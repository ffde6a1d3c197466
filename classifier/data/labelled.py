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
- a label in validation or test that training lacks is refused; ``data.label_map`` renames,
  merges or drops labels as read (:mod:`classifier.data.relabel`), for every source;
- a treebank's phrases (``data.phrases``) train; carved validation and test are sentences
  whose trees give training no phrase.

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

import dataclasses
import functools
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from classifier.config.schema import DataConfig
from classifier.data import files
from classifier.data.extra import extra_line, extra_rows
from classifier.data.relabel import label_pairs, relabelled
from classifier.data.tokenizer import standardize
from classifier.errors import DataError

SPLITS = ("train", "validation", "test")
#: The seed of the stratified split of one file: fixed, so that every run splits it alike.
SPLIT_SEED = 0
_TRAIN, _VALIDATION, _TEST, _DROPPED = 0, 1, 2, 3


@dataclass(frozen=True)
class Part:
    """The rows of one file that make one split: ``rows`` (a bool per row of the file) or every
    row (``rows`` None), and how many of each class it holds (in class order). A treebank's
    phrase split reads the distinct phrases of the trees ``trees`` marks, its ``rows`` among
    those."""

    name: str
    path: Path
    format: str
    rows: np.ndarray | None
    counts: tuple[int, ...]
    trees: np.ndarray | None = None  # a treebank's phrases: of the trees where True, rows of those

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
    label_map: Mapping[str, str | None] = field(default_factory=dict)  # data.label_map

    @property
    def sizes(self) -> dict[str, int]:
        return {name: part.size for name, part in self.parts.items()}

    def examples(self, name: str) -> Iterator[tuple[str, int]]:
        """``(text, label id)`` of every row of split ``name``, in file order, streamed."""
        part = self.parts[name]
        ids = {label: index for index, label in enumerate(self.labels)}
        ids.update({read: ids[name] for read, name in self.label_map.items() if name in ids})
        phrases = False if part.trees is None else part.trees
        records = files.records(part.path, self.text_field, self.label_field, phrases=phrases)
        for row, record in enumerate(records):
            if part.rows is None or part.rows[row]:
                yield record.text, ids[record.label]


#: Rows within which training shuffles at least (the shuffle buffer of
#: :func:`classifier.data.batching.vectorize`); a file ordered by class over longer runs trains
#: on one class at a time.
SHUFFLE_WINDOW = 25_000
#: Token ids the shuffle buffer may hold: 25,000 reviews of 512 ids (100 MB as int64), so that
#: short texts (the treebank's phrases: 64 ids at most) shuffle 200,000 at a time.
SHUFFLE_IDS = SHUFFLE_WINDOW * 512


def shuffle_rows(sequence_length: int) -> int:
    """The rows training shuffles at a time: :data:`SHUFFLE_WINDOW`, or more where the texts
    are short enough that :data:`SHUFFLE_IDS` ids hold more of them.

    Example:
        >>> shuffle_rows(2500), shuffle_rows(512), shuffle_rows(64)
        (25000, 25000, 200000)
    """
    return max(SHUFFLE_WINDOW, SHUFFLE_IDS // sequence_length)


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
    relabel = tuple(plan.label_map.items()) or None
    codes = _scan(
        os.fspath(part.path), plan.text_field, plan.label_field, relabel, part.trees
    ).codes
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
    source = files.open_source(cfg.source)  # a TFDS data set has its own test split
    return {name: path or source.own_split(name) for name, path in given.items()}


def plan_splits(cfg: DataConfig) -> Plan:
    """Check ``cfg.source`` (and ``cfg.validation``, ``cfg.test``) and plan the splits.

    Raises:
        DataError: one line naming the file: missing, malformed, not UTF-8, without the text
            or label column, with empty texts or labels, one class only, a label that
            ``data.label_map`` lacks, or a label in validation or test that training lacks.
    """
    if cfg.source is None:
        raise ValueError("plan_splits is for data.source; the IMDB data has its own splits")
    fields = (cfg.text_field, cfg.label_field)
    relabel = label_pairs(cfg.label_map)
    source = _scan(cfg.source, *fields, relabel)  # a treebank's sentences
    given = split_files(cfg)
    carve_validation = cfg.validation_fraction if given["validation"] is None else 0.0
    carve_test = cfg.test_fraction if given["test"] is None else 0.0
    names = list(source.counts)
    assignment = split_assignment(
        source.codes, carve_validation, carve_test, SPLIT_SEED, names=names, where=cfg.source
    )
    training, rows = source, assignment == _TRAIN
    if cfg.phrases:  # the distinct phrases of the training sentences' trees
        training = _scan(cfg.source, *fields, relabel, phrases=assignment == _TRAIN)
        rows = training.codes >= 0
    counts = np.bincount(training.codes[rows], minlength=len(training.counts))
    present = {name: int(n) for name, n in zip(training.counts, counts, strict=True) if n}
    labels = files.class_names(present, _declared(cfg, present), where=cfg.source)
    parts = {"train": _part("train", training, labels, rows)}
    if cfg.phrases:
        parts["train"] = dataclasses.replace(parts["train"], trees=assignment == _TRAIN)
    for name, path, code in (
        ("validation", given["validation"], _VALIDATION),
        ("test", given["test"], _TEST),
    ):
        if path is None:
            parts[name] = _part(name, source, labels, assignment == code)
        else:
            scan = _scan(path, *fields, relabel)
            _check_known(scan, labels, name, cfg.source)
            parts[name] = _part(name, scan, labels, scan.codes >= 0)
    return Plan(labels, parts, *fields, dict(relabel or ()))


def _declared(cfg: DataConfig, present: Mapping[str, int]) -> str | None:
    """The class order asked for: ``data.labels``, else ``data.label_map``'s, else a TFDS data
    set's own (where it names at least two of the classes present), else None (sorted)."""
    if cfg.labels is not None:
        return cfg.labels
    if cfg.label_map is not None:
        order = list(dict.fromkeys(name for _, name in label_pairs(cfg.label_map) or () if name))
    else:
        order = files.open_source(cfg.source).class_order(cfg.label_field) or []
    kept = [name for name in order if name in present]
    return ",".join(kept) if len(kept) >= 2 else None  # one class: class_names says so


def split_assignment(
    codes: np.ndarray, validation: float, test: float, seed: int = 0,
    *, names: Sequence[str] | None = None, where: str = "",
) -> np.ndarray:  # fmt: skip
    """Each row's split as uint8: 0 train, 1 validation, 2 test (3: none, a code below 0, a
    label that ``data.label_map`` drops). Stratified and exact: of a
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
    assignment = np.where(codes < 0, _DROPPED, _TRAIN).astype(np.uint8)
    order = np.argsort(codes, kind="stable")
    order = order[codes[order] >= 0]  # rows whose label data.label_map drops: in no split
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
    found = np.bincount(codes[codes >= 0], minlength=len(scan.counts))
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


def _scan(
    path: str,
    text_field: str,
    label_field: str,
    relabel: tuple[tuple[str, str | None], ...] | None = None,
    phrases: np.ndarray | None = None,
) -> files.Scan:
    """:func:`classifier.data.files.scan`, once per file as it is now (path, size, mtime), its
    labels mapped by ``relabel`` (a dropped row's code is -1); with ``phrases``, the distinct
    phrases of the treebank's trees where it holds."""
    try:
        stat = os.stat(path)
    except OSError:
        return files.scan(path, text_field, label_field)  # raises its own one line
    trees = None if phrases is None else (np.packbits(phrases).tobytes(), len(phrases))
    key = (os.path.abspath(path), stat.st_size, stat.st_mtime_ns, text_field, label_field)
    return _cached_scan(*key, relabel, trees)


@functools.lru_cache(maxsize=16)
def _cached_scan(path, size, mtime_ns, text_field, label_field, relabel, trees):
    del size, mtime_ns  # in the key only: a file changed since is scanned again
    phrases = False if trees is None else np.unpackbits(np.frombuffer(trees[0], np.uint8))
    phrases = phrases if trees is None else phrases[: trees[1]].astype(bool)
    scan = files.scan(path, text_field, label_field, phrases=phrases)
    return scan if relabel is None else relabelled(scan, dict(relabel))


def describe(cfg: DataConfig) -> str:
    """A printable summary of a labelled source: where each split comes from, its size and
    class balance, text lengths in words (as the models split them) and an example per class.
    Reads the files (streamed); imports no TensorFlow.

    Example::

        print(describe(DataConfig(source="../shared/data/sst5/train.csv",
                                  validation="../shared/data/sst5/dev.csv")))
    """
    plan = plan_splits(cfg)
    longest = max(part.size for part in plan.parts.values())
    width = max(len(f"{longest:,} (100%)"), *(len(label) for label in plan.labels))
    header = f"{'split':<11}{'texts':>9}" + "".join(
        f"{label:>{width + 2}}" for label in plan.labels
    )
    header += f"{'words p50':>11}{'p90':>7}{'p99':>7}{'max':>7}"
    rows, examples = [header], {}
    for name, part in plan.parts.items():
        lengths = []
        for text, label in plan.examples(name):
            lengths.append(len(standardize(text, cfg.sentences).split()))
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
        *([extra_line(cfg, extra_rows(cfg, plan.labels)[1].size)] if cfg.extra else []),
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
        train = every labelled phrase of train.txt's trees, each once; test = dev.txt; ...
    """
    given = split_files(cfg)
    carved = [name for name in ("validation", "test") if given[name] is None]
    share = {name: getattr(cfg, f"{name}_fraction") for name in carved}
    train = f"{1.0 - sum(share.values()):.0%}" if carved else "all"
    if cfg.phrases:
        whole = [f"train = every labelled phrase of {train} of {cfg.source}'s trees, each once"]
    elif len(carved) == 2:
        shares = ", ".join(f"{value:.0%}" for value in share.values())
        return f"train, validation, test: {train}, {shares} of {cfg.source}, stratified by class"
    else:
        whole = [f"train = {plan.parts['train'].path}"] if not carved else []
    whole += [f"{name} = {plan.parts[name].path}" for name in ("validation", "test") if given[name]]
    shares = ", ".join(f"{value:.0%}" for value in share.values())
    whose = "'s trees" if cfg.phrases else ""
    tail = f"{' and '.join(carved)}: {shares} of {cfg.source}{whose}"
    return "; ".join(whole + ([tail + ", stratified by class"] if carved else []))

"""More labelled texts for training only (``data.extra``): rows that join the training split of
whatever ``data.source`` gives (IMDB by default), never validation or test, so that what a run
is chosen and scored on stays the source's own.

A treebank's trees (``.txt``) add every distinct labelled phrase of every tree; any other source
its rows. ``data.extra_label_map`` names their labels as the source's classes (``0=negative,
1=negative, 2=, 3=positive, 4=positive`` makes the treebank's five labels IMDB's two, dropping
the neutral ones; ``2=*`` adds each neutral one once per class instead, a target spread evenly
over the classes, so that what such rows hold, "the soundtrack", leans no way); without it the
labels must be the source's class names already. A label the map lacks, a class the source
does not have, or nothing left is one line naming the file.

Example::

    texts, ids = extra_rows(DataConfig(extra="trees/train.txt",
                                       extra_label_map="0=negative, 1=negative, 2=, 3=positive, 4=positive"),
                            ("negative", "positive"))
    len(texts), ids[:3]  # (77616, array([1, 1, 1]))
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from classifier.config.checks import EVERY_CLASS, parse_label_map
from classifier.config.schema import DataConfig
from classifier.data import files, named
from classifier.errors import DataError


def extra_rows(cfg: DataConfig, labels: tuple[str, ...]) -> tuple[list[str], np.ndarray]:
    """The texts of ``cfg.extra`` and their label ids among ``labels`` (the source's classes).

    Raises:
        DataError: as the module's docstring says, or the file's own bad input.
    """
    path = str(cfg.extra)
    if not named.is_named(path) and not Path(path).exists():
        raise DataError(
            f"data.extra: {path} not found (the added training texts); put it there, or set "
            "data.extra and data.extra_label_map to null to train without them"
        )
    relabel = (
        parse_label_map(cfg.extra_label_map, "data.extra_label_map")
        if cfg.extra_label_map
        else None
    )
    index = {name: code for code, name in enumerate(labels)}
    texts, codes = [], []
    for record in files.records(path, cfg.text_field, cfg.label_field, phrases=_treebank(path)):
        name: str | None = record.label
        if relabel is not None:
            if record.label not in relabel:
                raise DataError(
                    f"{path}: {record.where}: label '{record.label}' is not in "
                    "data.extra_label_map; map it to a class, or drop its rows with "
                    f"'{record.label}='"
                )
            name = relabel[record.label]
        if name is None:
            continue
        if name == EVERY_CLASS:  # once per class: the loss's target spread evenly
            texts += [record.text] * len(labels)
            codes += range(len(labels))
            continue
        if name not in index:
            raise DataError(
                f"{path}: {record.where}: class '{name}' is not one of the training classes "
                f"({', '.join(labels)}); map it with data.extra_label_map"
            )
        texts.append(record.text)
        codes.append(index[name])
    if not texts:
        raise DataError(f"{path}: no row left to add to training (data.extra_label_map drops all)")
    return texts, np.array(codes, dtype=np.int64)


def extra_line(cfg: DataConfig, added: int) -> str:
    """What ``classify data`` says of the extra rows.

    Example:
        >>> extra_line(DataConfig(extra="trees/train.txt"), 77616)
        "train adds 77,616 rows of trees/train.txt (its trees' labelled phrases, each once)"
        >>> extra_line(DataConfig(extra="t.txt", extra_label_map="0=a, 1=b, 2="), 9)[-43:]
        'that data.extra_label_map keeps, each once)'
        >>> extra_line(DataConfig(extra="t.txt", extra_label_map="0=a, 1=b, 2=*"), 9)[-45:]
        'each once; those it maps to * once per class)'
    """
    kept = " that data.extra_label_map keeps" if cfg.extra_label_map else ""
    every = (
        bool(cfg.extra_label_map)
        and EVERY_CLASS
        in parse_label_map(str(cfg.extra_label_map), "data.extra_label_map").values()
    )
    spread = f"those it maps to {EVERY_CLASS} once per class"
    if _treebank(str(cfg.extra)):
        how = f" (its trees' labelled phrases{kept}, each once{'; ' + spread if every else ''})"
    else:
        how = f" ({spread})" if every else ""
    return f"train adds {added:,} rows of {cfg.extra}{how}"


def _treebank(path: str) -> bool:
    """Whether ``path`` names a treebank's trees (by its suffix, as :func:`files.open_source`
    tells the formats apart)."""
    return files.FORMATS.get(Path(path).suffix.lower()) == "treebank"

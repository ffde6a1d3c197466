"""``data.label_map``: a source's labels renamed, merged or dropped as they are read, the same
way for every source (a file, class folders, a TFDS data set, a treebank). Every label read
must be in the map; one mapped to nothing leaves its rows out of every split.

Example:
    >>> label_pairs("0=negative, 1=negative, 2=, 3=positive")
    (('0', 'negative'), ('1', 'negative'), ('2', None), ('3', 'positive'))
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from classifier.config.checks import parse_label_map
from classifier.data import files
from classifier.errors import DataError


def label_pairs(label_map: str | None) -> tuple[tuple[str, str | None], ...] | None:
    """``data.label_map`` as ``(label read, class)`` pairs (hashable: the scan cache's key),
    or None where there is no map."""
    return None if label_map is None else tuple(parse_label_map(label_map).items())


def relabelled(scan: files.Scan, relabel: Mapping[str, str | None]) -> files.Scan:
    """``scan`` with its labels mapped by ``relabel``: a DataError for a label the map lacks;
    a label mapped to None leaves its rows out (their code is -1)."""
    if unknown := [label for label in scan.counts if label not in relabel]:
        more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
        raise DataError(
            f"{scan.path}: label '{unknown[0]}'{more} is not in data.label_map; map it to a "
            f"class, or drop its rows with '{unknown[0]}='"
        )
    names = list(dict.fromkeys(relabel[label] for label in scan.counts if relabel[label]))
    new = [names.index(relabel[label]) if relabel[label] else -1 for label in scan.counts]
    codes = np.array(new or [0])[scan.codes].astype(np.int32) if len(scan.codes) else scan.codes
    counts = {name: int(np.sum(codes == index)) for index, name in enumerate(names)}
    return files.Scan(scan.path, scan.format, scan.rows, counts, codes)

"""The comparison table of :mod:`classifier.sweeps.compare`'s rows, as aligned text, Markdown,
CSV or JSON (``classify compare --format``).

Example:
    >>> FORMATS
    ('table', 'markdown', 'csv', 'json')
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence

from classifier.sweeps.compare import ComparisonRow

FORMATS = ("table", "markdown", "csv", "json")

COLUMNS = (
    "variant",
    "seeds",
    "key params",
    "best val acc",
    "test acc",
    "test macro-F1",
    "vs bow (pts)",
    "test ECE",
    "epochs",
    "train time (s)",
    "params",
)
CSV_COLUMNS = (
    "variant",
    "seeds",
    "key_params",
    "best_val_accuracy",
    "test_accuracy_mean",
    "test_accuracy_std",
    "test_macro_f1_mean",
    "test_macro_f1_std",
    "test_accuracy_vs_bow",
    "test_ece",
    "epochs",
    "train_time_s",
    "parameters",
)
_TEXT_COLUMNS = 3  # left-aligned; the numbers are right-aligned


def format_comparison(rows: Sequence[ComparisonRow], fmt: str = "table") -> str:
    """The comparison table as ``table`` (aligned text), ``markdown``, ``csv`` or ``json``.

    Example:
        >>> row = ComparisonRow("encoder", [1, 2], "d=16", 0.88, 0.871, 0.002, 7.0, 370.0, 171_000,
        ...     test_ece=0.012)
        >>> print(format_comparison([row], "markdown"))  # doctest: +NORMALIZE_WHITESPACE
        | variant | seeds | key params | best val acc | test acc | test macro-F1 | vs bow (pts)
          | test ECE | epochs | train time (s) | params |
        | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
        | encoder | 1,2 | d=16 | 0.8800 | 0.8710 ± 0.0020 | | | 0.0120 | 7.0 | 370.0 | 171,000 |
    """
    if fmt == "json":
        return json.dumps([row.to_json() for row in rows], indent=2)
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(CSV_COLUMNS)
        for row in rows:
            writer.writerow(
                [
                    row.variant,
                    _seeds(row.seeds),
                    row.key_params,
                    _round(row.best_val_accuracy),
                    _round(row.test_accuracy_mean),
                    _round(row.test_accuracy_std),
                    "" if math.isnan(row.test_macro_f1_mean) else _round(row.test_macro_f1_mean),
                    "" if math.isnan(row.test_macro_f1_std) else _round(row.test_macro_f1_std),
                    "" if math.isnan(row.vs_baseline) else _round(row.vs_baseline),
                    "" if math.isnan(row.test_ece) else _round(row.test_ece),
                    _round(row.epochs),
                    _round(row.train_time_s),
                    "" if row.parameters is None else row.parameters,
                ]
            )
        return buffer.getvalue().rstrip("\n")
    cells = [_cells(row) for row in rows]
    if fmt == "markdown":
        align = ["---"] * _TEXT_COLUMNS + ["---:"] * (len(COLUMNS) - _TEXT_COLUMNS)
        lines = [_markdown_row(COLUMNS), _markdown_row(align)]
        lines += [_markdown_row(row) for row in cells]
        return "\n".join(lines)
    if fmt == "table":
        widths = [max(len(str(r[i])) for r in [COLUMNS, *cells]) for i in range(len(COLUMNS))]
        lines = []
        for row in [COLUMNS, *cells]:
            parts = [
                f"{cell:<{width}}" if i < _TEXT_COLUMNS else f"{cell:>{width}}"
                for i, (cell, width) in enumerate(zip(row, widths, strict=True))
            ]
            lines.append("  ".join(parts).rstrip())
        return "\n".join(lines)
    raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")


def _cells(row: ComparisonRow) -> tuple[str, ...]:
    return (
        row.variant,
        _seeds(row.seeds),
        row.key_params,
        f"{row.best_val_accuracy:.4f}",
        _spread(row.test_accuracy_mean, row.test_accuracy_std, len(row.seeds)),
        _spread(row.test_macro_f1_mean, row.test_macro_f1_std, len(row.seeds)),
        "" if math.isnan(row.vs_baseline) else f"{row.vs_baseline:+.2f}",
        "" if math.isnan(row.test_ece) else f"{row.test_ece:.4f}",
        f"{row.epochs:.1f}",
        f"{row.train_time_s:.1f}",
        "" if row.parameters is None else f"{row.parameters:,}",
    )


def _markdown_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(str(cell).replace("|", "\\|") for cell in cells) + " |"


def _spread(mean: float, std: float, seeds: int) -> str:
    """``mean ± std`` over several seeds; one seed has no spread to show; NaN: empty.

    Example:
        >>> _spread(0.91234, 0.0012, 3), _spread(0.91234, 0.0, 1)
        ('0.9123 ± 0.0012', '0.9123')
    """
    if math.isnan(mean):
        return ""
    return f"{mean:.4f} ± {std:.4f}" if seeds > 1 else f"{mean:.4f}"


def _seeds(seeds: Sequence[int]) -> str:
    return ",".join(str(seed) for seed in seeds)


def _round(value: float) -> float:
    return round(value, 6)

"""Text a figure can draw: the fonts at hand, and what to show for a character none of them has.

matplotlib draws a missing glyph as an empty box and warns once per character (``Glyph 26144
missing from font(s) DejaVu Sans``) on the terminal. :func:`drawable` instead puts
:data:`PLACEHOLDER` in place of every character that no font of :func:`font_families` can draw
and counts them, so that the figure can say so. :func:`font_families` is DejaVu Sans (which
matplotlib ships) followed by the CJK fonts installed on the machine, if any (Debian:
``fonts-noto-cjk``), which matplotlib falls back to character by character.

Example:
    >>> drawable("a good film")
    ('a good film', 0)
"""

from __future__ import annotations

import functools

PLACEHOLDER = "\u25a1"  # WHITE SQUARE, in DejaVu Sans
BASE_FAMILY = "DejaVu Sans"
_FALLBACK_HINTS = ("CJK", "Noto Sans JP", "Noto Sans SC", "WenQuanYi", "Droid Sans Fallback")


@functools.cache
def font_families() -> tuple[str, ...]:
    """DejaVu Sans, then the installed fonts that cover Chinese, Japanese or Korean."""
    from matplotlib import font_manager

    names = sorted({font.name for font in font_manager.fontManager.ttflist})
    extra = [name for name in names if any(hint in name for hint in _FALLBACK_HINTS)]
    return (BASE_FAMILY, *extra)


@functools.cache
def _code_points() -> frozenset[int]:
    """Every code point some font of :func:`font_families` has a glyph for."""
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    points: set[int] = set()
    for family in font_families():
        properties = font_manager.FontProperties(family=family)
        path = font_manager.findfont(properties, fallback_to_default=False)
        points.update(FT2Font(path).get_charmap())
    return frozenset(points)


def drawable(text: str) -> tuple[str, int]:
    """``text`` with each character no font here can draw replaced by :data:`PLACEHOLDER`, and
    how many were replaced (spaces and control characters are left alone).

    Example:
        >>> drawable("x\u0378")  # U+0378: unassigned, no font has it
        ('x\u25a1', 1)
    """
    points = _code_points()
    missing = 0
    characters = []
    for character in text:
        if character.isspace() or ord(character) < 32 or ord(character) in points:
            characters.append(character)
        else:
            characters.append(PLACEHOLDER)
            missing += 1
    return "".join(characters), missing

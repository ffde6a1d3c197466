"""Figures draw the text they are given or say what they could not draw, without warnings."""

from __future__ import annotations

import warnings

import numpy as np

from classifier.plots import TokenFigure, plot_token_attention
from classifier.plots.glyphs import PLACEHOLDER, drawable, font_families


def test_characters_no_font_has_become_a_counted_placeholder():
    text, missing = drawable("good \u0378 film \ue000")
    assert text == f"good {PLACEHOLDER} film {PLACEHOLDER}" and missing == 2
    assert drawable("Ein furchtbarer Film, très ennuyeux") == (
        "Ein furchtbarer Film, très ennuyeux",
        0,
    )


def test_cjk_is_drawn_by_an_installed_font_or_replaced():
    text, missing = drawable("映画")
    has_cjk_font = len(font_families()) > 1
    assert (text, missing) == (("映画", 0) if has_cjk_font else (PLACEHOLDER * 2, 2))


def test_an_explain_figure_of_japanese_words_raises_no_warning(tmp_path):
    # b2bae7f: ten 'Glyph ... missing from font(s) DejaVu Sans' warnings on the terminal
    tokens = ["映画", "はとても", "退屈", "great"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        shown = TokenFigure(
            tokens,
            [False, False, False, True],
            np.array([0.1, 0.2, 0.3, 0.4]),
            "negative",
            0.2,
            "4 tokens of 映画.txt",
            [("great", 0.4, 1), ("退屈", 0.3, 1)],
        )
        path = plot_token_attention(tmp_path / "ja.png", shown)
    assert path.stat().st_size > 0
    assert [str(w.message) for w in caught] == []

"""Figures of attention: the sinusoidal table, attention heads, a review shaded by attention."""

from __future__ import annotations

import textwrap
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from classifier.plots.canvas import save
from classifier.plots.glyphs import PLACEHOLDER, drawable, font_families

LABEL_COLOURS = {"positive": "#1a7f37", "negative": "#b42318"}
COLOUR_MAP = "Oranges"  # of the token shading in explain's figures
SIGNED_COLOUR_MAP = "RdBu"  # signed contributions: red towards negative, blue towards positive


def plot_positional_encoding(
    path: str | Path, length: int, d_model: int, max_wavelength: float = 10000.0
) -> Path:
    """Heatmap of the sinusoidal position-encoding table, as in the TensorFlow tutorial.

    Args:
        path: PNG file to write.
        length: number of positions (rows).
        d_model: encoding width (columns).
        max_wavelength: the base of the sinusoids (10000 in the paper).

    Returns:
        The path written.

    Example:
        >>> plot_positional_encoding(tmp / "positional_encoding.png", 2048, 512).name
        'positional_encoding.png'
    """
    from keras import ops

    from classifier.layers.positional import sinusoidal_position_encoding

    table = ops.convert_to_numpy(sinusoidal_position_encoding(length, d_model, max_wavelength))
    figure = Figure(figsize=(8, 5))
    axes = figure.add_subplot()
    image = axes.pcolormesh(table.T, cmap="RdBu", vmin=-1.0, vmax=1.0)
    axes.set_xlabel("Position")
    axes.set_ylabel("Depth (even: sin, odd: cos)")
    axes.set_title(f"Sinusoidal position encoding ({length} x {d_model})")
    figure.colorbar(image, ax=axes)
    return save(figure, path)


def plot_attention_heads(
    path: str | Path,
    weights: Any,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    max_columns: int = 4,
) -> Path:
    """Attention-weight heatmaps for one sequence: one panel per head, tokens on both axes.

    Args:
        path: PNG file to write.
        weights: attention weights of one sequence, (h, T, S) or (T, S); a leading batch axis of
            size 1, (1, h, T, S), is dropped.
        query_tokens: T labels for the rows (queries).
        key_tokens: S labels for the columns (keys).
        max_columns: panels per row.

    Returns:
        The path written.

    Example:
        >>> from classifier.layers import EncoderLayer
        >>> tokens = ["a", "great", "film"]
        >>> x = np.random.default_rng(0).normal(size=(1, 3, 8)).astype("float32")
        >>> _, w = EncoderLayer(8, 2, 16)(x, return_attention_scores=True)  # (1, h, T, T)
        >>> plot_attention_heads(tmp / "attention.png", w, tokens, tokens).name
        'attention.png'
    """
    weights = np.asarray(weights, dtype="float32")
    if weights.ndim == 4 and weights.shape[0] == 1:
        weights = weights[0]
    if weights.ndim == 2:
        weights = weights[None]
    if weights.ndim != 3:
        raise ValueError(f"Expected weights of shape (h, T, S), got {weights.shape}.")
    heads, t, s = weights.shape
    if len(query_tokens) != t or len(key_tokens) != s:
        raise ValueError(
            f"weights are (h={heads}, T={t}, S={s}) but got {len(query_tokens)} query tokens "
            f"and {len(key_tokens)} key tokens."
        )
    columns = min(heads, max_columns)
    rows = -(-heads // columns)
    panel = max(2.5, 0.3 * max(t, s))
    figure = Figure(figsize=(panel * columns + 1, panel * rows), layout="constrained")
    image = None
    for head in range(heads):
        axes = figure.add_subplot(rows, columns, head + 1)
        image = axes.matshow(weights[head], cmap="viridis", vmin=0.0, vmax=1.0)
        axes.set_title(f"Head {head}")
        axes.set_xticks(range(s), labels=list(key_tokens), rotation=90)
        axes.set_yticks(range(t), labels=list(query_tokens))
        axes.tick_params(labelsize=8)
    figure.colorbar(image, ax=figure.axes, shrink=0.8)
    return save(figure, path)


def token_colours(
    shares: Sequence[float] | np.ndarray, top: float, signed: bool = False
) -> np.ndarray:
    """RGBA per token: its share of the attention, scaled so that ``top`` is darkest; with
    ``signed``, a contribution from red (``-top``) through white (0) to blue (``top``).

    Example:
        >>> token_colours([0.0, 0.5], top=0.5).shape
        (2, 4)
    """
    from matplotlib import colormaps

    scaled = np.asarray(shares, dtype=float) / max(top, 1e-12)
    if signed:
        return colormaps[SIGNED_COLOUR_MAP](0.5 + 0.5 * np.clip(scaled, -1.0, 1.0))
    return colormaps[COLOUR_MAP](0.05 + 0.9 * np.minimum(scaled, 1.0))


@dataclass(frozen=True)
class TokenFigure:
    """What an explain figure shows (:func:`plot_token_attention`).

    Attributes:
        tokens: the words the model saw; ``in_vocabulary`` per word (others are in italics).
        shares: (n,) the attention each token receives (or, ``signed``, its contribution).
        label, probability: the prediction (label and P(``target``)), as the title.
        caption: what the picture shows, under the title.
        top_words: ``(word, share, times)`` for the bar chart, most attended first.
        signed: ``shares`` are signed contributions to the ``measure`` (``log-odds of
            positive``), shaded red to blue, and ``top_words`` ranks them by size.
        second: (n,) attention shares drawn as a second panel, under ``second_caption``.
        target: the class whose probability ``probability`` is (``positive``).
        measure: what signed ``shares`` add to, for the colour bar (``margin of okay``).
    """

    tokens: Sequence[str]
    in_vocabulary: Sequence[bool]
    shares: np.ndarray
    label: str
    probability: float
    caption: str
    top_words: Sequence[tuple[str, float, int]]
    signed: bool = False
    second: np.ndarray | None = None
    second_caption: str = ""
    target: str = "positive"
    measure: str = "log-odds of positive"


def plot_token_attention(path: str | Path, shown: TokenFigure, width: float = 11.0) -> Path:
    """Write a PNG: the predicted label, the review's tokens shaded by the attention they
    receive (or a signed measure), a colour bar, optionally the tokens again shaded by a second
    measure (an attention model's weights beside its occlusion), and the top words as bars.
    ``width`` is in inches; the height follows the length of the review. Returns ``path``.

    Example:
        >>> shown = TokenFigure(["great", "film"], [True, True], np.array([0.7, 0.3]),
        ...     "positive", 0.93, "2 tokens", [("great", 0.7, 1)])
        >>> plot_token_attention(tmp / "great.png", shown).name
        'great.png'
    """
    tokens, in_vocabulary, shares = shown.tokens, shown.in_vocabulary, shown.shares
    label, probability, caption, top_words = (
        shown.label, shown.probability, shown.caption, shown.top_words,
    )  # fmt: skip
    signed, second, second_caption = shown.signed, shown.second, shown.second_caption
    target, measure = shown.target, shown.measure
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize
    from matplotlib.font_manager import FontProperties

    # Characters no font here has: a placeholder, and the caption says how many (no warnings).
    drawn = [drawable(token) for token in tokens]
    tokens = [token for token, _ in drawn]
    top_words = [(drawable(word)[0], share, times) for word, share, times in top_words]
    missing = sum(count for _, count in drawn)
    caption = drawable(caption)[0]
    if missing:
        caption += (
            f" {missing} character{'s' if missing > 1 else ''} that no font here can draw "
            f"{'are' if missing > 1 else 'is'} shown as {PLACEHOLDER}."
        )
    dpi, size = 100, 11.0
    family = list(font_families())
    regular = FontProperties(family=family, size=size)
    italic = FontProperties(family=family, size=size, style="italic")
    renderer = FigureCanvasAgg(Figure(dpi=dpi)).get_renderer()
    margin, pad, space, line = 0.45 * 72, 2.0, 0.42 * size, 1.95 * size  # points
    usable = width * 72 - 2 * margin
    places: list[tuple[float, int]] = []
    x, row = 0.0, 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # missing glyphs of exotic characters
        for token, known in zip(tokens, in_vocabulary, strict=True):
            font = regular if known else italic
            w = renderer.get_text_width_height_descent(token, font, ismath=False)[0] * 72 / dpi
            if x > 0 and x + w + 2 * pad > usable:
                x, row = 0.0, row + 1
            places.append((x + pad, row))
            x += w + 2 * pad + space

    caption = textwrap.fill(caption, 150)
    header = 56.0 + 11.0 * (caption.count("\n") + 1)  # points, from the top down
    text_height = (row + 1) * line + 8
    colourbar_top = header + text_height + 6
    panel_end = colourbar_top + 12 + 40  # the colour bar, its ticks and label
    if second is not None:
        second_caption = textwrap.fill(drawable(second_caption)[0], 150)
        second_header = panel_end + 11.0 * (second_caption.count("\n") + 1) + 8
        second_colourbar_top = second_header + text_height + 6
        panel_end = second_colourbar_top + 12 + 40
    chart_top = panel_end + 16  # the chart title
    chart_height = 20.0 * len(top_words)
    height = chart_top + chart_height + 46  # the chart's ticks and label
    figure = Figure(figsize=(width, height / 72), dpi=dpi)

    def fy(points_from_top: float) -> float:
        return 1 - points_from_top / height

    colour = LABEL_COLOURS.get(label, "black")
    figure.text(
        margin / (width * 72),
        fy(28),
        f"Predicted: {label}",
        fontsize=17,
        fontweight="bold",
        color=colour,
        parse_math=False,
    )
    figure.text(
        (margin + 250) / (width * 72),
        fy(28),
        f"P({target}) = {probability:.3f}",
        fontsize=13,
        parse_math=False,
    )
    figure.text(
        margin / (width * 72),
        fy(44),
        caption,
        fontsize=8.5,
        color="#444444",
        va="top",
        parse_math=False,
    )
    magnitudes = np.abs(shares) if signed else np.asarray(shares)
    top_share = float(np.max(magnitudes)) if len(shares) else 1.0
    left = margin / (width * 72)

    def panel(values, top, signed, text_top, bar_top) -> None:
        """The tokens shaded by ``values``, then the colour bar under them."""
        sizes = np.abs(values) if signed else np.asarray(values)
        for (px, prow), token, known, rgba, size_ in zip(
            places,
            tokens,
            in_vocabulary,
            token_colours(values, top, signed),
            sizes / max(top, 1e-12),
            strict=True,
        ):
            figure.text(
                (margin + px) / (width * 72),
                fy(text_top + (prow + 0.75) * line),
                token,
                fontproperties=regular if known else italic,
                color="white" if size_ > 0.65 else "black",
                bbox={"boxstyle": "round,pad=0.18", "facecolor": rgba, "edgecolor": "none"},
                parse_math=False,
            )
        cax = figure.add_axes((left, fy(bar_top + 12), 0.35, 12 / height))
        if signed:
            mappable = ScalarMappable(Normalize(-top, top), SIGNED_COLOUR_MAP)
            label = f"contribution to the {measure}"
        else:
            mappable = ScalarMappable(Normalize(0, top), COLOUR_MAP)
            label = "share of the attention the token receives"
        figure.colorbar(mappable, cax=cax, orientation="horizontal")
        cax.set_xlabel(label, fontsize=8.5)
        cax.tick_params(labelsize=8)

    panel(shares, top_share, signed, header, colourbar_top)
    measure = (
        f"contribution to the {measure}" if signed else "share of the attention the token receives"
    )
    if second is not None:
        figure.text(
            left,
            fy(second_header - 11.0 * (second_caption.count("\n") + 1)),
            second_caption,
            fontsize=8.5,
            color="#444444",
            va="top",
            parse_math=False,
        )
        strongest = float(np.max(second)) if len(second) else 1.0
        panel(second, strongest, False, second_header, second_colourbar_top)

    axes = figure.add_axes((left + 0.12, fy(chart_top + chart_height), 0.55, chart_height / height))
    labels = [f"{word} (x{times})" if times > 1 else word for word, _, times in top_words]
    bars = [share for _, share, _ in top_words]
    positions = np.arange(len(top_words))[::-1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        axes.barh(positions, bars, color=token_colours(bars, top_share, signed), height=0.75)
        axes.set_yticks(positions, labels=labels, fontsize=9)
    if signed:
        axes.axvline(0, color="#888888", linewidth=0.8)
        axes.set_title(f"Words that weigh most (of {len(tokens)} tokens)", fontsize=10)
        axes.set_xlabel(f"{measure} (its largest occurrence)", fontsize=8.5)
    else:
        axes.set_title(f"Most attended words (of {len(tokens)} tokens)", fontsize=10)
        axes.set_xlabel(f"{measure} (its most attended occurrence)", fontsize=8.5)
    axes.tick_params(axis="x", labelsize=8)
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)

    return save(figure, path, bbox_inches=None)

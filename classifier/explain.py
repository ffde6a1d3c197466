"""Which words a trained classifier attends to, drawn over the review (PNG or HTML).

For one review, :func:`explain_text` recomputes the token ids with the model's own vectorizer,
replays the embedding and the attention stack of the classifier with
``return_attention_scores=True`` and takes the weights of the last attention layer, averaged
over heads. The attention a token *receives* is the mean, over the real (non-padding) query
positions q, of ``weights[q, k]``: it sums to 1 over the review's tokens. The replay is checked
against the model itself (:attr:`Explanation.replayed_probability`).

Every classifier variant is supported: ``encoder`` (last layer of our Encoder), ``block`` and
``block_pos`` (our TransformerBlock), ``mha`` (``keras.layers.MultiHeadAttention``, last of two)
and ``attention`` (``keras.layers.Attention``, one head, last of two).

Example:
    >>> model = load_model("model.keras")
    >>> explanation = explain_text(model, "A wonderful, moving film.")
    >>> plot_token_attention("review.png", explanation)
"""

from __future__ import annotations

import html
import textwrap
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import keras
import numpy as np
import tensorflow as tf

from classifier.data import LABELS, standardize_review
from classifier.errors import ExplainError
from classifier.layers import attention_mask, padding_mask
from classifier.predict import (
    DEFAULT_THRESHOLD,
    STDIN,
    Reporter,
    read_reviews,
    review_byte_limit,
    vectorizer_of,
)

OUTPUT_FORMATS = ("png", "html")
LABEL_COLOURS = {"positive": "#1a7f37", "negative": "#b42318"}
COLOUR_MAP = "Oranges"
TOP_WORDS = 15


@dataclass(frozen=True)
class Explanation:
    """The tokens of one review weighted by the attention they receive, and the prediction.

    Attributes:
        source: where the review came from.
        tokens: the n words the model saw (standardized, after truncation), in order.
        in_vocabulary: per token, ``False`` for out-of-vocabulary words (id 1).
        attention: (n,) attention each token receives; sums to 1.
        probability: the model's probability of ``positive``.
        label: ``positive`` or ``negative`` (probability >= threshold).
        layer: the attention layer the weights come from, in words.
        heads: number of heads averaged.
        dropped_words: words beyond the model's ``sequence_length`` that it never saw.
        truncate: which end of a long review the model keeps (``tail`` or ``head``).
        replayed_probability: the probability recomputed from the replayed stack (a check).
    """

    source: str
    tokens: list[str]
    in_vocabulary: list[bool]
    attention: np.ndarray
    probability: float
    label: str
    layer: str
    heads: int
    dropped_words: int
    truncate: str
    replayed_probability: float


def explain_text(
    model: keras.Model, text: str, threshold: float = DEFAULT_THRESHOLD, source: str = ""
) -> Explanation:
    """Predict one review and weigh its tokens by the attention they receive (last layer).

    Raises:
        ExplainError: when no word of the review is left after standardization, or the model
            has no attention stack this module knows how to replay.
    """
    vectorizer = vectorizer_of(model)
    classifier = _classifier_of(model)
    texts = tf.constant([text], dtype=tf.string)
    ids = vectorizer(texts)  # (1, T)
    mask = padding_mask(ids)  # (1, T), True at real tokens
    count = int(np.sum(keras.ops.convert_to_numpy(mask)))
    if count == 0:
        raise ExplainError("no words left after standardization (nothing to explain)")

    hidden, weights, layer, heads = _replay_attention(classifier, ids, mask)
    received = attention_received(weights[0], keras.ops.convert_to_numpy(mask)[0])
    probability = float(keras.ops.convert_to_numpy(model(texts, training=False))[0, 1])
    replayed = _replay_head(classifier, hidden, mask)

    words = [
        word.decode("utf-8", errors="replace")
        for word in tf.strings.split(standardize_review(texts)).to_list()[0]
    ]
    length = vectorizer.sequence_length
    kept = words[:length] if vectorizer.truncate == "head" else words[-length:]
    token_ids = keras.ops.convert_to_numpy(ids)[0][:count]
    if len(kept) != count:  # never expected; fall back to the vocabulary's spelling
        vocabulary = vectorizer.get_vocabulary()
        kept = [vocabulary[int(i)] for i in token_ids]
    return Explanation(
        source=source,
        tokens=kept,
        in_vocabulary=[int(i) != 1 for i in token_ids],
        attention=received[:count],
        probability=probability,
        label=LABELS[1] if probability >= threshold else LABELS[0],
        layer=layer,
        heads=heads,
        dropped_words=max(0, len(words) - count),
        truncate=vectorizer.truncate,
        replayed_probability=replayed,
    )


def attention_received(weights: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Attention each key receives: the mean over heads, then over real query positions.

    Args:
        weights: (h, T, S) or (T, S) attention weights of one sequence (rows: queries).
        mask: (T,) bool, ``True`` at real tokens (queries and keys share it).

    Returns:
        (S,) float array, 0 at padding; it sums to 1 when every real row sums to 1.

    Example:
        >>> attention_received(np.array([[[0.5, 0.5], [1.0, 0.0]]]), np.array([True, True]))
        array([0.75, 0.25])
    """
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim == 3:
        weights = weights.mean(axis=0)
    mask = np.asarray(mask, dtype=bool)
    received = weights[mask].mean(axis=0) if mask.any() else np.zeros(weights.shape[-1])
    return np.where(mask, received, 0.0)


def _classifier_of(model: keras.Model) -> keras.Model:
    for layer in model.layers:
        if isinstance(layer, keras.Model) and any(sub.name == "embedding" for sub in layer.layers):
            return layer
    raise ExplainError(f"model {model.name!r} holds no classifier with an 'embedding' layer")


def _replay_attention(classifier: keras.Model, ids, mask):
    """Run the embedding and attention stack; return (hidden, last weights (1,h,T,T), name, h)."""
    names = [layer.name for layer in classifier.layers]
    x = classifier.get_layer("embedding")(ids)
    if "encoder" in names:
        encoder = classifier.get_layer("encoder")
        hidden, all_weights = encoder(x, padding_mask=mask, return_attention_scores=True)
        weights = all_weights[-1]
        layer = f"encoder layer {len(all_weights)} of {len(all_weights)}"
    elif "transformer_block" in names:
        block = classifier.get_layer("transformer_block")
        hidden, weights = block(x, padding_mask=mask, return_attention_scores=True)
        layer = "the transformer block"
    elif "mha_0" in names:
        stack = [name for name in names if name.startswith("mha_")]
        pairs = attention_mask(mask, mask)
        hidden = x
        for name in stack:
            hidden, weights = classifier.get_layer(name)(
                hidden, hidden, attention_mask=pairs, return_attention_scores=True
            )
        layer = f"MultiHeadAttention layer {len(stack)} of {len(stack)}"
    elif "attention_0" in names:
        stack = [name for name in names if name.startswith("attention_")]
        hidden = x
        for name in stack:
            hidden, weights = classifier.get_layer(name)(
                [hidden, hidden], mask=[mask, mask], return_attention_scores=True
            )
        weights = keras.ops.expand_dims(weights, 1)  # one head
        layer = f"Attention layer {len(stack)} of {len(stack)}"
    else:
        raise ExplainError(
            f"classifier {classifier.name!r} has no attention layer to explain "
            "(expected encoder, transformer_block, mha_0 or attention_0)"
        )
    weights = keras.ops.convert_to_numpy(weights)
    return hidden, weights, layer, int(weights.shape[1])


def _replay_head(classifier: keras.Model, hidden, mask) -> float:
    pooled = classifier.get_layer("pool")(hidden, mask=mask)
    pooled = classifier.get_layer("head_dropout")(pooled, training=False)
    return float(keras.ops.convert_to_numpy(classifier.get_layer("head")(pooled))[0, 1])


# --- pictures --------------------------------------------------------------------------------


def _colours(explanation: Explanation) -> np.ndarray:
    """RGBA per token: the share of attention, scaled so the most attended token is darkest."""
    from matplotlib import colormaps

    attention = explanation.attention
    top = float(attention.max()) if attention.size and attention.max() > 0 else 1.0
    return colormaps[COLOUR_MAP](0.05 + 0.9 * attention / top)


def _caption(explanation: Explanation) -> str:
    n = len(explanation.tokens)
    kept = "last" if explanation.truncate == "tail" else "first"
    dropped = (
        f"; the model only saw the {kept} {n} words ({explanation.dropped_words:,} more dropped)"
        if explanation.dropped_words
        else ""
    )
    return (
        f"{explanation.source}: {n} tokens{dropped}. Colour: the attention each token receives "
        f"in {explanation.layer} (mean over {explanation.heads} head"
        f"{'s' if explanation.heads != 1 else ''} and all {n} query positions)."
        " Italic: not in the vocabulary."
    )


def _top_words(explanation: Explanation, count: int = TOP_WORDS) -> list[tuple[str, float, int]]:
    """The most attended words, each with the share of its most attended occurrence and how
    often it occurs: ``(word, share, times)``."""
    best: dict[str, float] = {}
    times: dict[str, int] = {}
    for token, share in zip(explanation.tokens, explanation.attention, strict=True):
        best[token] = max(best.get(token, 0.0), float(share))
        times[token] = times.get(token, 0) + 1
    ranked = sorted(best.items(), key=lambda item: -item[1])[:count]
    return [(word, share, times[word]) for word, share in ranked]


def plot_token_attention(path: str | Path, explanation: Explanation, width: float = 11.0) -> Path:
    """Write a PNG: the predicted label, the review's tokens shaded by the attention they
    receive, a colour bar, and the most attended words as bars.

    Args:
        path: PNG file to write (parents are created).
        explanation: from :func:`explain_text`.
        width: figure width in inches; the height follows the length of the review.

    Returns:
        The path written.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize
    from matplotlib.figure import Figure
    from matplotlib.font_manager import FontProperties

    dpi, size = 100, 11.0
    regular, italic = FontProperties(size=size), FontProperties(size=size, style="italic")
    renderer = FigureCanvasAgg(Figure(dpi=dpi)).get_renderer()
    margin, pad, space, line = 0.45 * 72, 2.0, 0.42 * size, 1.95 * size  # points
    usable = width * 72 - 2 * margin
    places: list[tuple[float, int]] = []
    x, row = 0.0, 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # missing glyphs of exotic characters
        for token, known in zip(explanation.tokens, explanation.in_vocabulary, strict=True):
            font = regular if known else italic
            w = renderer.get_text_width_height_descent(token, font, ismath=False)[0] * 72 / dpi
            if x > 0 and x + w + 2 * pad > usable:
                x, row = 0.0, row + 1
            places.append((x + pad, row))
            x += w + 2 * pad + space

    top_words = _top_words(explanation)
    caption = textwrap.fill(_caption(explanation), 150)
    header = 56.0 + 11.0 * (caption.count("\n") + 1)  # points, from the top down
    text_height = (row + 1) * line + 8
    colourbar_top = header + text_height + 6
    chart_top = colourbar_top + 12 + 56  # the colour bar, its ticks and label, the chart title
    chart_height = 20.0 * len(top_words)
    height = chart_top + chart_height + 46  # the chart's ticks and label
    figure = Figure(figsize=(width, height / 72), dpi=dpi)

    def fy(points_from_top: float) -> float:
        return 1 - points_from_top / height

    colour = LABEL_COLOURS.get(explanation.label, "black")
    figure.text(
        margin / (width * 72),
        fy(28),
        f"Predicted: {explanation.label}",
        fontsize=17,
        fontweight="bold",
        color=colour,
        parse_math=False,
    )
    figure.text(
        (margin + 250) / (width * 72),
        fy(28),
        f"P(positive) = {explanation.probability:.3f}",
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
    colours = _colours(explanation)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for (px, prow), token, known, rgba, share in zip(
            places,
            explanation.tokens,
            explanation.in_vocabulary,
            colours,
            explanation.attention / max(float(explanation.attention.max()), 1e-12),
            strict=True,
        ):
            figure.text(
                (margin + px) / (width * 72),
                fy(header + (prow + 0.75) * line),
                token,
                fontproperties=regular if known else italic,
                color="white" if share > 0.65 else "black",
                bbox={"boxstyle": "round,pad=0.18", "facecolor": rgba, "edgecolor": "none"},
                parse_math=False,
            )

    left = margin / (width * 72)
    cax = figure.add_axes((left, fy(colourbar_top + 12), 0.35, 12 / height))
    top_share = float(explanation.attention.max()) if explanation.attention.size else 1.0
    mappable = ScalarMappable(Normalize(0, top_share), COLOUR_MAP)
    figure.colorbar(mappable, cax=cax, orientation="horizontal")
    cax.set_xlabel("share of the attention the token receives", fontsize=8.5)
    cax.tick_params(labelsize=8)

    axes = figure.add_axes((left + 0.12, fy(chart_top + chart_height), 0.55, chart_height / height))
    labels = [f"{word} (x{times})" if times > 1 else word for word, _, times in top_words]
    shares = [share for _, share, _ in top_words]
    positions = np.arange(len(top_words))[::-1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        axes.barh(positions, shares, color=_colours_for(shares, top_share), height=0.75)
        axes.set_yticks(positions, labels=labels, fontsize=9)
    axes.set_title(f"Most attended words (of {len(explanation.tokens)} tokens)", fontsize=10)
    axes.set_xlabel("share of the attention received (its most attended occurrence)", fontsize=8.5)
    axes.tick_params(axis="x", labelsize=8)
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(figure)
    figure.savefig(path, format="png", dpi=dpi)
    return path


def _colours_for(shares: list[float], top: float) -> np.ndarray:
    from matplotlib import colormaps

    return colormaps[COLOUR_MAP](0.05 + 0.9 * np.minimum(np.asarray(shares) / max(top, 1e-12), 1))


def write_html(path: str | Path, explanation: Explanation) -> Path:
    """Write a self-contained HTML page (inline CSS, no scripts or links): the label, the
    tokens shaded by the attention they receive (hover for the number) and the top words."""
    colours = _colours(explanation)
    top = float(explanation.attention.max()) if explanation.attention.size else 1.0
    spans = []
    for token, known, rgba, share in zip(
        explanation.tokens, explanation.in_vocabulary, colours, explanation.attention, strict=True
    ):
        red, green, blue = (int(round(255 * c)) for c in rgba[:3])
        ink = "#fff" if share / max(top, 1e-12) > 0.65 else "#000"
        style = f"background:rgb({red},{green},{blue});color:{ink}"
        if not known:
            style += ";font-style:italic"
        spans.append(
            f'<span class="t" style="{style}" title="{share:.4f}">{html.escape(token)}</span>'
        )
    top_words = _top_words(explanation)
    widest = max((share for _, share, _ in top_words), default=1.0)
    rows = "\n".join(
        f"<tr><td>{html.escape(word)}</td><td>{times}</td><td>{share:.4f}</td>"
        f'<td><div class="bar" style="width:{300 * share / max(widest, 1e-12):.0f}px"></div>'
        "</td></tr>"
        for word, share, times in top_words
    )
    colour = LABEL_COLOURS.get(explanation.label, "black")
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{html.escape(explanation.source)}: {explanation.label}</title>
<style>
body {{ font-family: sans-serif; max-width: 60rem; margin: 2rem auto; line-height: 2.1; }}
h1 {{ color: {colour}; margin-bottom: 0; }}
.caption {{ color: #444; font-size: 0.85rem; line-height: 1.4; }}
.t {{ padding: 0.1rem 0.2rem; border-radius: 0.25rem; }}
.bar {{ background: #e8590c; height: 0.8rem; }}
table {{ border-collapse: collapse; line-height: 1.4; font-size: 0.9rem; }}
td, th {{ padding: 0.1rem 0.6rem; text-align: left; }}
.legend {{ display: inline-block; width: 12rem; height: 0.8rem; vertical-align: middle;
  background: linear-gradient(to right, rgb(254,237,222), rgb(127,39,4)); }}
</style></head><body>
<h1>Predicted: {explanation.label}</h1>
<p>P(positive) = {explanation.probability:.3f}</p>
<p class="caption">{html.escape(_caption(explanation))}<br>
least <span class="legend"></span> most attention (hover a word for its share)</p>
<p>{" ".join(spans)}</p>
<h2>Most attended words</h2>
<table><tr><th>word</th><th>times</th><th>largest share</th><th></th></tr>
{rows}
</table>
</body></html>
"""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path


# --- one file, end to end --------------------------------------------------------------------


def default_output(path: str, output_format: str) -> Path:
    """``<name>.attention.png`` (or ``.html``) in the working directory."""
    stem = "stdin" if path == STDIN else Path(path).name
    return Path(f"{stem}.attention.{output_format}")


def output_format_of(output: str | None, output_format: str | None) -> str:
    """The explicit format, else the output file's extension (``.html``/``.htm``), else png."""
    if output_format:
        return output_format
    if output and Path(output).suffix.lower() in (".html", ".htm"):
        return "html"
    return "png"


def explain_file(
    model: keras.Model,
    path: str,
    *,
    output: str | None = None,
    output_format: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    err: Callable[[str], None] = print,
    stdin: BinaryIO | None = None,
) -> tuple[Path, Explanation] | None:
    """Explain the review in ``path`` (``-``: stdin) into a PNG or HTML file.

    Bad input is reported on one line through ``err`` (as in ``classify predict``).

    Returns:
        ``(path written, explanation)``, or ``None`` when the input could not be explained.
    """
    reporter = Reporter(err)
    output_format = output_format_of(output, output_format)
    reviews = read_reviews(
        [path],
        reporter,
        max_bytes=review_byte_limit(model),
        keep=vectorizer_of(model).truncate,
        stdin=stdin,
    )
    review = next(iter(reviews), None)
    if review is None:
        return None
    try:
        explanation = explain_text(model, review.text, threshold, source=review.source)
    except ExplainError as error:
        reporter.error(review.source, str(error))
        return None
    target = Path(output) if output else default_output(path, output_format)
    try:
        if output_format == "html":
            written = write_html(target, explanation)
        else:
            written = plot_token_attention(target, explanation)
    except OSError as error:
        reporter.error(str(target), f"cannot write ({error.strerror or error})")
        return None
    return written, explanation


def summary(written: Path, explanation: Explanation) -> str:
    """The line ``classify explain`` prints."""
    return (
        f"{written}: {explanation.label} (P(positive) {explanation.probability:.4f}), "
        f"{len(explanation.tokens)} tokens, attention of {explanation.layer}"
    )

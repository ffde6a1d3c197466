"""What ``classify explain`` shows of an :class:`Explanation`: the caption, the top words,
the PNG's arguments (:func:`classifier.plots.plot_token_attention`) and the HTML page.

Example:
    >>> explanation = Explanation("r.txt", ["great", "film"], [True, True],
    ...     np.array([0.7, 0.3]), 0.93, "positive", "the last layer", 1, 0, "tail")
    >>> top_words(explanation)
    [('great', 0.7, 1), ('film', 0.3, 1)]
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from classifier import plots

TOP_WORDS = 15


@dataclass(frozen=True)
class Explanation:
    """The tokens of one review weighted by the attention they receive, and the prediction.

    Attributes:
        source: where the review came from.
        tokens: the n words the model saw (standardized, after truncation), in order.
        in_vocabulary: per token, ``False`` for out-of-vocabulary words (id 1).
        attention: (n,) attention each token receives (sums to 1); or, when ``signed``, each
            word's contribution to the log-odds of positive.
        probability: the model's probability of ``positive``.
        label: ``positive`` or ``negative`` (probability >= threshold).
        layer: the attention layer the weights come from, in words.
        heads: number of heads averaged.
        dropped_words: words beyond the model's ``sequence_length`` that it never saw.
        truncate: which end of a long review the model keeps (``tail`` or ``head``).
        signed: ``attention`` holds signed numbers (a linear model's contributions, or the
            occlusion of an attention model's words), not shares.
        weights: (n,) the attention each token receives, shown as a second panel beside the
            signed occlusion of an attention model (or the n-gram contributions of a fused
            one); None for a linear model.
        branch_log_odds: a fused model's (``nbow_attention``): what its attention branch adds
            to the log-odds of positive, while ``attention`` holds its n-gram branch's word
            contributions; None for other models.
        ngram_order, scaled: an n-gram model's longest n-gram and the values its weights
            multiply (``TF-IDF``, or ``NB-scaled``), for the caption.
        target: the class the words are weighed towards (``positive``), whose probability
            ``probability`` is.
        against: the other class of a two-class model (``negative``); empty for more classes,
            where the words move ``target``'s margin: its logit minus the others' mean.
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
    signed: bool = False
    weights: np.ndarray | None = None
    branch_log_odds: float | None = None
    target: str = "positive"
    against: str = "negative"
    ngram_order: int = 2
    scaled: str = "TF-IDF"

    @property
    def kind(self) -> str:
        """What the figure shows, for its file name: ``contributions`` (n-gram models),
        ``occlusion`` (attention models, beside their attention) or ``attention``."""
        if self.branch_log_odds is not None or (self.signed and self.weights is None):
            return "contributions"
        return "occlusion" if self.weights is not None else "attention"

    @property
    def shares(self) -> str:
        """How a word gets the n-grams it is in, in words (``with half of each word pair``)."""
        parts = ["half of each word pair", "a third of each word triple"][: self.ngram_order - 1]
        return f", with {' and '.join(parts)} it is in" if parts else ""

    @property
    def measure(self) -> str:
        """What the signed numbers move, in words: ``log-odds of positive``, or for more
        than two classes ``margin of okay`` (its logit minus the mean of the others')."""
        return f"log-odds of {self.target}" if self.against else f"margin of {self.target}"

    @property
    def towards(self) -> str:
        """The colour's meaning: ``blue towards positive, red towards negative``."""
        away = f"red towards {self.against}" if self.against else "red away from it"
        return f"blue towards {self.target}, {away}"


def caption(explanation: Explanation) -> str:
    """The caption under the label: what was seen, and what the colour means."""
    n = len(explanation.tokens)
    kept = "last" if explanation.truncate == "tail" else "first"
    dropped = (
        f"; the model only saw the {kept} {n} words ({explanation.dropped_words:,} more dropped)"
        if explanation.dropped_words
        else ""
    )
    if explanation.branch_log_odds is not None:
        return (
            f"{explanation.source}: {n} tokens{dropped}. Colour: each word's contribution to the "
            f"{explanation.measure} in the n-gram branch (weight x NB-scaled value, with a share "
            f"of each n-gram it is in): {explanation.towards}. The attention branch adds "
            f"{explanation.branch_log_odds:+.2f} to the {explanation.measure.split()[0]}. Italic: "
            "not in the vocabulary."
        )
    if explanation.weights is not None:
        return (
            f"{explanation.source}: {n} tokens{dropped}. Colour: how far each word moves the "
            f"{explanation.measure}: the model's {explanation.measure.split()[0]} with the word "
            f"minus without it (occlusion), {explanation.towards}. Italic: not in the "
            "vocabulary."
        )
    if explanation.signed:
        return (
            f"{explanation.source}: {n} tokens{dropped}. Colour: each word's contribution to the "
            f"{explanation.measure} in {explanation.layer} (weight x {explanation.scaled} value"
            f"{explanation.shares}): {explanation.towards}."
            " Italic: not in the vocabulary."
        )
    return (
        f"{explanation.source}: {n} tokens{dropped}. Colour: the attention each token receives "
        f"in {explanation.layer} (mean over {explanation.heads} head"
        f"{'s' if explanation.heads != 1 else ''} and all {n} query positions)."
        " Italic: not in the vocabulary."
    )


def top_words(explanation: Explanation, count: int = TOP_WORDS) -> list[tuple[str, float, int]]:
    """The most attended words (the largest contributions, by size, when signed), each with
    its largest occurrence and how often it occurs: ``(word, share, times)``."""
    best: dict[str, float] = {}
    times: dict[str, int] = {}
    for token, share in zip(explanation.tokens, explanation.attention, strict=True):
        if token not in best or abs(share) > abs(best[token]):
            best[token] = float(share)
        times[token] = times.get(token, 0) + 1
    ranked = sorted(best.items(), key=lambda item: -abs(item[1]))[:count]
    return [(word, share, times[word]) for word, share in ranked]


def token_figure(explanation: Explanation) -> plots.TokenFigure:
    """What :func:`classifier.plots.plot_token_attention` draws of an explanation."""
    return plots.TokenFigure(
        tokens=explanation.tokens,
        in_vocabulary=explanation.in_vocabulary,
        shares=explanation.attention,
        label=explanation.label,
        probability=explanation.probability,
        target=explanation.target,
        measure=explanation.measure,
        caption=caption(explanation),
        top_words=top_words(explanation),
        signed=explanation.signed,
        second=explanation.weights,
        second_caption=weights_caption(explanation) if explanation.weights is not None else "",
    )


def weights_caption(explanation: Explanation) -> str:
    """The caption of the attention panel beside an occlusion: what attention weights are."""
    heads = f"{explanation.heads} head{'s' if explanation.heads != 1 else ''}"
    unread = ""
    if explanation.branch_log_odds is not None:
        read = int(np.flatnonzero(explanation.weights).max(initial=-1)) + 1  # zeros: unread
        if read < len(explanation.tokens):
            unread = f" The attention branch reads the first {read} tokens only."
    return (
        f"Attention each token receives in {explanation.layer} (mean over {heads} and all "
        f"query positions): where the model looks, not which way a word pushes.{unread}"
    )


def _css_rgb(rgba) -> str:
    """``rgb(r,g,b)`` of a matplotlib RGBA colour.

    Example:
        >>> _css_rgb((1.0, 0.5, 0.0, 1.0))
        'rgb(255,128,0)'
    """
    red, green, blue = (int(round(255 * c)) for c in rgba[:3])
    return f"rgb({red},{green},{blue})"


def write_html(path: str | Path, explanation: Explanation) -> Path:
    """Write a self-contained HTML page (inline CSS, no scripts or links): the label, the
    tokens shaded by the attention they receive (hover for the number) and the top words."""
    signed = explanation.signed
    sizes = np.abs(explanation.attention) if signed else explanation.attention
    top = float(sizes.max()) if explanation.attention.size else 1.0
    colours = plots.token_colours(explanation.attention, top, signed)
    spans = []
    for token, known, rgba, share in zip(
        explanation.tokens, explanation.in_vocabulary, colours, explanation.attention, strict=True
    ):
        ink = "#fff" if abs(share) / max(top, 1e-12) > 0.65 else "#000"
        style = f"background:{_css_rgb(rgba)};color:{ink}"
        if not known:
            style += ";font-style:italic"
        spans.append(
            f'<span class="t" style="{style}" title="{share:.4f}">{html.escape(token)}</span>'
        )
    second = ""
    if explanation.weights is not None:
        weights = explanation.weights
        strongest = float(weights.max()) if weights.size else 1.0
        shaded = plots.token_colours(weights, strongest)
        second_spans = [
            f'<span class="t" style="background:{_css_rgb(rgba)};color:'
            f'{"#fff" if share / max(strongest, 1e-12) > 0.65 else "#000"}" '
            f'title="{share:.4f}">{html.escape(token)}</span>'
            for token, rgba, share in zip(explanation.tokens, shaded, weights, strict=True)
        ]
        second = (
            f'<h2>Attention</h2>\n<p class="caption">{html.escape(weights_caption(explanation))}'
            f'<br>least <span class="legend attention"></span> most attention</p>\n'
            f"<p>{' '.join(second_spans)}</p>\n"
        )
    ranked = top_words(explanation)
    widest = max((abs(share) for _, share, _ in ranked), default=1.0)
    # the bars take the colour the PNG gives them: the token's own shade
    bar_colours = plots.token_colours([share for _, share, _ in ranked], top, signed)
    rows = "\n".join(
        f"<tr><td>{html.escape(word)}</td><td>{times}</td><td>{share:.4f}</td>"
        f'<td><div class="bar" style="width:{300 * abs(share) / max(widest, 1e-12):.0f}px;'
        f'background:{_css_rgb(rgba)}"></div></td></tr>'
        for (word, share, times), rgba in zip(ranked, bar_colours, strict=True)
    )
    if signed:
        away = explanation.against or f"away from {explanation.target}"
        legend = ("rgb(103,0,31), rgb(247,247,247), rgb(5,48,97)", away, explanation.target)
        heading, column = "Words that weigh most", "largest contribution"
    else:
        legend = ("rgb(254,237,222), rgb(127,39,4)", "least", "most attention")
        heading, column = "Most attended words", "largest share"
    colour = plots.LABEL_COLOURS.get(explanation.label, "black")
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
  background: linear-gradient(to right, {legend[0]}); }}
.legend.attention {{ background: linear-gradient(to right, rgb(254,237,222), rgb(127,39,4)); }}
</style></head><body>
<h1>Predicted: {explanation.label}</h1>
<p>P({html.escape(explanation.target)}) = {explanation.probability:.3f}</p>
<p class="caption">{html.escape(caption(explanation))}<br>
{legend[1]} <span class="legend"></span> {legend[2]} (hover a word for its number)</p>
<p>{" ".join(spans)}</p>
{second}<h2>{heading}</h2>
<table><tr><th>word</th><th>times</th><th>{column}</th><th></th></tr>
{rows}
</table>
</body></html>
"""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path

"""Which words a trained classifier attends to, drawn over the review (PNG or HTML).

For one review, :func:`explain_text` recomputes the token ids with the model's own vectorizer
and runs a second Keras model over the classifier's own graph and weights that outputs both
the probabilities and the attention weights of the layer the variant registry names
(:attr:`~classifier.models.variants.Variant.explained_layer`; the last one of a stack),
averaged over heads. Nothing is replayed by hand: :func:`attention_model` wires the graph
with ``keras.models.clone_model``, sharing every layer but the explained one, which is a
weight-identical copy called with ``return_attention_scores=True`` (Keras cannot give a second
output to a layer already called without it). So models saved before this module changed are
explained the same way.

The attention a token *receives* is the mean, over the real (non-padding) query positions q,
of ``weights[q, k]``: it sums to 1 over the review's tokens.

Example (a trained model; ``classify explain`` does this)::

    model = classifier.registry.load_model("model.keras")
    explanation = explain_text(model, "A wonderful, moving film.")
    plots.plot_token_attention("review.png", **figure_arguments(explanation))
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import keras
import numpy as np
import tensorflow as tf

from classifier import plots
from classifier.data import LABELS, standardize_review
from classifier.errors import ExplainError
from classifier.keras_predict import classifier_of, vectorizer_of
from classifier.models import variants
from classifier.predict import DEFAULT_THRESHOLD
from classifier.reviews import STDIN, Reporter, read_reviews, review_byte_limit

OUTPUT_FORMATS = ("png", "html")
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


def attention_model(classifier: keras.Model) -> tuple[keras.Model, str]:
    """A model over ``classifier``'s graph and weights: token ids to ``(probabilities (B, 2),
    attention weights (B, h, T, T))`` of the layer its variant explains; and that layer in words.

    Raises:
        ExplainError: the classifier is not one the variant registry knows, or lacks the layer.
    """
    variant = variants.variant_of_model(classifier.name)
    if variant is None:
        raise ExplainError(f"model {classifier.name!r} is not a classifier of a known variant")
    try:
        original = classifier.get_layer(variant.explained_layer)
    except ValueError:
        raise ExplainError(
            f"classifier {classifier.name!r} has no layer {variant.explained_layer!r} to explain"
        ) from None
    captured = []

    def clone_function(layer):
        return type(layer).from_config(layer.get_config()) if layer is original else layer

    def call_function(layer, *args, **kwargs):
        if layer.name != original.name or layer is original:
            return layer(*args, **kwargs)
        output, weights = layer(*args, return_attention_scores=True, **kwargs)
        layer.set_weights(original.get_weights())  # built by the call above
        captured.append(weights)
        return output

    (token_ids,) = classifier.inputs
    inputs = keras.Input(shape=(None,), dtype=token_ids.dtype, name="token_ids")
    clone = keras.models.clone_model(
        classifier, inputs, clone_function=clone_function, call_function=call_function
    )
    (weights,) = captured
    stacked = isinstance(weights, list | tuple)  # a stack: every layer's weights
    last = len(weights) if stacked else 1
    weights = weights[-1] if stacked else weights
    if len(weights.shape) == 3:  # one head: (B, T, S)
        weights = keras.ops.expand_dims(weights, 1)
    described = variant.explained_as.format(last=last)
    return keras.Model(
        inputs, [clone.output, weights], name="attention_of_" + clone.name
    ), described


def explain_text(
    model: keras.Model, text: str, threshold: float = DEFAULT_THRESHOLD, source: str = ""
) -> Explanation:
    """Predict one review and weigh its tokens by the attention they receive (last layer).

    Raises:
        ExplainError: when no word of the review is left after standardization, or the model
            is not a classifier of a registered variant.
    """
    vectorizer = vectorizer_of(model)
    texts = tf.constant([text], dtype=tf.string)
    token_ids = keras.ops.convert_to_numpy(vectorizer(texts))[0]
    count = int(np.count_nonzero(token_ids))  # padding (0) only ever follows the words
    if count == 0:
        raise ExplainError("no words left after standardization (nothing to explain)")
    explainer, layer = attention_model(classifier_of(model))
    probabilities, weights = explainer(token_ids[None, :count], training=False)
    weights = keras.ops.convert_to_numpy(weights)[0]
    probability = float(keras.ops.convert_to_numpy(probabilities)[0, 1])

    words = [
        word.decode("utf-8", errors="replace")
        for word in tf.strings.split(standardize_review(texts)).to_list()[0]
    ]
    length = vectorizer.sequence_length
    kept = words[:length] if vectorizer.truncate == "head" else words[-length:]
    if len(kept) != count:  # never expected; fall back to the vocabulary's spelling
        vocabulary = vectorizer.get_vocabulary()
        kept = [vocabulary[int(i)] for i in token_ids[:count]]
    return Explanation(
        source=source,
        tokens=kept,
        in_vocabulary=[int(i) != 1 for i in token_ids[:count]],
        attention=attention_received(weights, np.ones(count, dtype=bool)),
        probability=probability,
        label=LABELS[1] if probability >= threshold else LABELS[0],
        layer=layer,
        heads=int(weights.shape[0]),
        dropped_words=max(0, len(words) - count),
        truncate=vectorizer.truncate,
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


# --- what the pictures show ------------------------------------------------------------------


def caption(explanation: Explanation) -> str:
    """The caption under the label: what was seen, and what the colour means."""
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


def top_words(explanation: Explanation, count: int = TOP_WORDS) -> list[tuple[str, float, int]]:
    """The most attended words, each with the share of its most attended occurrence and how
    often it occurs: ``(word, share, times)``."""
    best: dict[str, float] = {}
    times: dict[str, int] = {}
    for token, share in zip(explanation.tokens, explanation.attention, strict=True):
        best[token] = max(best.get(token, 0.0), float(share))
        times[token] = times.get(token, 0) + 1
    ranked = sorted(best.items(), key=lambda item: -item[1])[:count]
    return [(word, share, times[word]) for word, share in ranked]


def figure_arguments(explanation: Explanation) -> dict:
    """The keyword arguments of :func:`classifier.plots.plot_token_attention` (all but path)."""
    return {
        "tokens": explanation.tokens,
        "in_vocabulary": explanation.in_vocabulary,
        "shares": explanation.attention,
        "label": explanation.label,
        "probability": explanation.probability,
        "caption": caption(explanation),
        "top_words": top_words(explanation),
    }


def write_html(path: str | Path, explanation: Explanation) -> Path:
    """Write a self-contained HTML page (inline CSS, no scripts or links): the label, the
    tokens shaded by the attention they receive (hover for the number) and the top words."""
    top = float(explanation.attention.max()) if explanation.attention.size else 1.0
    colours = plots.token_colours(explanation.attention, top)
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
    ranked = top_words(explanation)
    widest = max((share for _, share, _ in ranked), default=1.0)
    rows = "\n".join(
        f"<tr><td>{html.escape(word)}</td><td>{times}</td><td>{share:.4f}</td>"
        f'<td><div class="bar" style="width:{300 * share / max(widest, 1e-12):.0f}px"></div>'
        "</td></tr>"
        for word, share, times in ranked
    )
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
  background: linear-gradient(to right, rgb(254,237,222), rgb(127,39,4)); }}
</style></head><body>
<h1>Predicted: {explanation.label}</h1>
<p>P(positive) = {explanation.probability:.3f}</p>
<p class="caption">{html.escape(caption(explanation))}<br>
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
    """``<name>.attention.png`` (or ``.html``) in the working directory.

    Example:
        >>> default_output("reviews/great.txt", "png")
        PosixPath('great.txt.attention.png')
    """
    stem = "stdin" if path == STDIN else Path(path).name
    return Path(f"{stem}.attention.{output_format}")


def output_format_of(output: str | None, output_format: str | None) -> str:
    """The explicit format, else the output file's extension (``.html``/``.htm``), else png.

    Example:
        >>> output_format_of("page.HTML", None), output_format_of(None, None)
        ('html', 'png')
    """
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
    vectorizer = vectorizer_of(model)
    reviews = read_reviews(
        [path],
        reporter,
        max_bytes=review_byte_limit(vectorizer.sequence_length),
        keep=vectorizer.truncate,
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
            written = plots.plot_token_attention(target, **figure_arguments(explanation))
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

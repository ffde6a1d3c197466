"""Which words a trained classifier leans on, drawn over the review (PNG or HTML).

For one review, :func:`explain_text` reads the model through a *view* (:class:`ModelView`): a
LiteRT bundle's (:class:`~classifier.explain.bundle_view.BundleView`, no TensorFlow: what
``classify explain`` uses for a run's model) or a Keras model's
(:class:`~classifier.explain.keras_view.KerasView`, for a ``.keras`` file or a run logged
before bundles held explain parts). Both give the token ids, the probabilities, a bag's
features and weights, and the attention weights of the layer the variant registry names
(:attr:`~classifier.config.variants.Variant.explained_layer`; the last one of a stack),
averaged over heads; the numbers agree within 1e-5.

The attention a token *receives* is the mean, over the real (non-padding) query positions q,
of ``weights[q, k]``: it sums to 1 over the review's tokens.

Words are weighed towards one class (the second of two, ``positive``; else the predicted
class or one named): by its log-odds for two classes, by its margin (its logit minus the mean of
the others') for more. A linear model (``bow``, ``nbow``: ``explains="contributions"``) is its
own explanation: each word is shaded by its exact contribution, signed, from red (away from the
class) to blue (towards it). Attention has no sign (a strongly attended word may push either
way), so an attention model's words are shaded the same way by their occlusion (the margin with
the word minus without it), and the attention they receive is a second panel. A fused model
(``nbow_attention``, ``explains="contributions+attention"``) shows its n-gram branch's word
contributions, what its attention branch adds, and that branch's attention as the second panel.
The numbers come from :mod:`classifier.explain.measures`.

Example (a run's bundle; ``classify explain`` does this)::

    bundle = classifier.serving.litert_engine.load_bundle("bundle")
    explanation = explain_text(bundle, "A wonderful, moving film.")
    plots.plot_token_attention("review.png", token_figure(explanation))
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, Protocol

import numpy as np

from classifier import plots
from classifier.data.tokenizer import OOV_ID, Tokenizer
from classifier.errors import ExplainError
from classifier.explain.measures import (
    attention_received,
    branch_margin,
    target_class,
    word_contributions,
    word_occlusion,
)
from classifier.explain.views import Explanation, token_figure, write_html
from classifier.serving.explain_parts import NgramWeights
from classifier.serving.litert_engine import BundleModel
from classifier.serving.predict import DEFAULT_THRESHOLD
from classifier.serving.reviews import STDIN, Reporter, read_reviews, review_byte_limit

OUTPUT_FORMATS = ("png", "html")
TOP_WORDS = 15


class ModelView(Protocol):
    """What :func:`explain_text` reads of a model, as NumPy arrays.

    Attributes:
        labels: the class names, in the model's order.
        tokenizer: the model's words and ids (``sequence_length``, ``truncate``).
        explains: ``contributions``, ``attention`` or ``contributions+attention``.
        layer: the explained layer in words, for the caption.
        ngram_weights: a bag's weights (n-gram models).
    """

    labels: tuple[str, ...]
    tokenizer: Tokenizer
    explains: str
    layer: str
    ngram_weights: NgramWeights | None

    def encode(self, text: str) -> np.ndarray:
        """Token ids (sequence_length,) of one review, padded with 0."""

    def probabilities(self, token_ids: np.ndarray) -> np.ndarray:
        """Class probabilities (B, K) of token ids (B, W)."""

    def ngram_values(self, token_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A bag's sorted features, their values and the features by position, for ids (T,)."""

    def attention(self, token_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """The explained layer's weights (h, T, S) and a fused model's branch logits (K,)."""


def view_of(model) -> ModelView:
    """The view of a model: a bundle's (no TensorFlow), a Keras model's, or ``model`` itself if
    it already is one.

    Raises:
        ModelError: a bundle without explain parts, or with damaged ones (one line).
    """
    if isinstance(model, BundleModel):
        from classifier.explain.bundle_view import BundleView

        return BundleView(model)
    if hasattr(model, "ngram_values"):
        return model
    from classifier.explain.keras_view import KerasView

    return KerasView(model)


def explain_text(
    model,
    text: str,
    threshold: float = DEFAULT_THRESHOLD,
    source: str = "",
    target: str | None = None,
) -> Explanation:
    """Predict one review and weigh its words towards one class: ``target``, else (two
    classes) ``positive``'s log-odds, else (more) the predicted class's margin, its logit minus
    the mean logit of the others (:func:`~classifier.explain.measures.margin_direction`); and
    the attention each token receives (last layer), for attention models. ``model``: a bundle,
    a Keras end-to-end model or a :class:`ModelView`.

    Raises:
        ExplainError: when no word of the review is left after standardization, or the model
            is not a classifier of a registered variant.
        ModelError: ``target`` is not one of the model's classes.
    """
    view = view_of(model)
    token_ids = view.encode(text)
    count = int(np.count_nonzero(token_ids))  # padding (0) only ever follows the words
    if count == 0:
        raise ExplainError("no words left after standardization (nothing to explain)")
    labels = view.labels
    ids = token_ids[:count]
    probabilities = np.asarray(view.probabilities(ids[None, :]))[0]
    c = target_class(labels, target, probabilities)
    branch = None  # a fused model's attention branch: its share of the margin
    weights = view.ngram_weights if view.explains != "attention" else None
    if view.explains == "contributions":
        _, shares = word_contributions(weights, *view.ngram_values(ids), count, c)
        heads = 0
    else:
        attention, logits = view.attention(ids)
        read = attention.shape[-1]  # a fused model's attention branch reads the first words only
        received = np.zeros(count)
        received[:read] = attention_received(attention, np.ones(read, dtype=bool))
        heads = attention.shape[0]
        if view.explains == "contributions+attention":  # both branches: exact, each in its panel
            _, shares = word_contributions(weights, *view.ngram_values(ids), count, c)
            branch = branch_margin(logits, weights.head_kernel, c)
        else:  # attention has no sign: the occlusion of each word says which way it pushes
            _, shares = word_occlusion(view.probabilities, ids, c=c)
    probability = float(probabilities[c])
    if len(labels) == 2:
        label = labels[1] if float(probabilities[1]) >= threshold else labels[0]
    else:
        label = labels[int(np.argmax(probabilities))]

    tokenizer = view.tokenizer
    words = tokenizer.words(text)
    kept = tokenizer.kept_words(text)
    typed = tokenizer.kept_words(text, as_typed=True)  # "far from", where kept reads "far not"
    read_as = [tokenizer.vocabulary[int(i)] for i in token_ids[:count]]
    if len(kept) != count:  # never expected; fall back to the vocabulary's spelling
        kept = read_as
    if len(typed) != len(kept):
        typed = kept
    # a misspelt word read as a known one (data.spelling) shows both: "wonedrful (wonderful)";
    # so does a two-word negation's second word (data.negation_phrases): "from (not)"
    kept = [
        f"{shown} ({known})"
        if shown != word or (int(i) > OOV_ID and not tokenizer.knows(word))
        else word
        for shown, word, known, i in zip(typed, kept, read_as, token_ids[:count], strict=True)
    ]
    return Explanation(
        source=source,
        tokens=kept,
        in_vocabulary=[int(i) != 1 for i in token_ids[:count]],
        attention=shares,
        probability=probability,
        label=label,
        layer=view.layer,
        heads=int(heads),
        dropped_words=max(0, len(words) - count),
        truncate=tokenizer.truncate,
        signed=True,
        weights=None if heads == 0 else received,
        branch_log_odds=branch,
        target=labels[c],
        against=labels[1 - c] if len(labels) == 2 else "",
        ngram_order=weights.order if weights is not None else 2,
        scaled="NB-scaled" if weights is not None and weights.scale_name == "ratio" else "TF-IDF",
    )


# --- one file, end to end --------------------------------------------------------------------


def default_output(path: str, output_format: str, kind: str = "attention") -> Path:
    """``<name>.<kind>.png`` (or ``.html``) in the working directory; ``kind`` says what the
    figure shows (:attr:`Explanation.kind`: contributions, occlusion or attention).

    Example:
        >>> default_output("reviews/great.txt", "png", "contributions")
        PosixPath('great.txt.contributions.png')
    """
    stem = "stdin" if path == STDIN else Path(path).name
    return Path(f"{stem}.{kind}.{output_format}")


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
    model,
    path: str,
    *,
    output: str | None = None,
    output_format: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    err: Callable[[str], None] = print,
    stdin: BinaryIO | None = None,
    target: str | None = None,
) -> tuple[Path, Explanation] | None:
    """Explain the review in ``path`` (``-``: stdin) into a PNG or HTML file.

    Bad input is reported on one line through ``err`` (as in ``classify predict``).

    Returns:
        ``(path written, explanation)``, or ``None`` when the input could not be explained.
    """
    reporter = Reporter(err)
    output_format = output_format_of(output, output_format)
    view = view_of(model)
    tokenizer = view.tokenizer
    reviews = read_reviews(
        [path],
        reporter,
        max_bytes=review_byte_limit(tokenizer.sequence_length),
        keep=tokenizer.truncate,
        stdin=stdin,
    )
    review = next(iter(reviews), None)
    if review is None:
        return None
    try:
        explanation = explain_text(view, review.text, threshold, review.source, target)
    except ExplainError as error:
        reporter.error(review.source, str(error))
        return None
    target = Path(output) if output else default_output(path, output_format, explanation.kind)
    try:
        if output_format == "html":
            written = write_html(target, explanation)
        else:
            written = plots.plot_token_attention(target, token_figure(explanation))
    except OSError as error:
        reporter.error(str(target), f"cannot write ({error.strerror or error})")
        return None
    return written, explanation


def summary(written: Path, explanation: Explanation) -> str:
    """The line ``classify explain`` prints."""
    return (
        f"{written}: {explanation.label} (P({explanation.target}) "
        f"{explanation.probability:.4f}), {len(explanation.tokens)} tokens, "
        + (
            f"n-gram contributions, attention branch {explanation.branch_log_odds:+.2f} "
            f"{'log-odds' if explanation.against else 'margin'}, and attention of "
            if explanation.branch_log_odds is not None
            else "word occlusion, and attention of "
            if explanation.weights is not None
            else "word contributions in "
            if explanation.signed
            else "attention of "
        )
        + explanation.layer
    )

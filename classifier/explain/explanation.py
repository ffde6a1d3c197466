"""Which words a trained classifier attends to, drawn over the review (PNG or HTML).

For one review, :func:`explain_text` recomputes the token ids with the model's own vectorizer
and runs a second Keras model over the classifier's own graph and weights that outputs both
the probabilities and the attention weights of the layer the variant registry names
(:attr:`~classifier.config.variants.Variant.explained_layer`; the last one of a stack),
averaged over heads. Nothing is replayed by hand: :func:`attention_model` wires the graph
with ``keras.models.clone_model``, sharing every layer but the explained one, which is a
weight-identical copy called with ``return_attention_scores=True`` (Keras cannot give a second
output to a layer already called without it). So models saved before this module changed are
explained the same way.

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

Example (a trained model; ``classify explain`` does this)::

    model = classifier.serving.registry.load_model("model.keras")
    explanation = explain_text(model, "A wonderful, moving film.")
    plots.plot_token_attention("review.png", **figure_arguments(explanation))
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import keras
import numpy as np
import tensorflow as tf

from classifier import plots
from classifier.config import variants
from classifier.data.pipeline import standardize_review
from classifier.errors import ExplainError
from classifier.explain.measures import (
    attention_received,
    branch_log_odds,
    target_class,
    word_contributions,
    word_occlusion,
)
from classifier.explain.views import Explanation, figure_arguments, write_html
from classifier.serving.keras_engine import classifier_of, labels_of, vectorizer_of
from classifier.serving.predict import DEFAULT_THRESHOLD
from classifier.serving.reviews import STDIN, Reporter, read_reviews, review_byte_limit

OUTPUT_FORMATS = ("png", "html")
TOP_WORDS = 15


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
    model: keras.Model,
    text: str,
    threshold: float = DEFAULT_THRESHOLD,
    source: str = "",
    target: str | None = None,
) -> Explanation:
    """Predict one review and weigh its words towards one class: ``target``, else (two
    classes) ``positive``'s log-odds, else (more) the predicted class's margin, its logit minus
    the mean logit of the others (:func:`margin_direction`); and the attention each token
    receives (last layer), for attention models.

    Raises:
        ExplainError: when no word of the review is left after standardization, or the model
            is not a classifier of a registered variant.
        ModelError: ``target`` is not one of the model's classes.
    """
    vectorizer = vectorizer_of(model)
    texts = tf.constant([text], dtype=tf.string)
    token_ids = keras.ops.convert_to_numpy(vectorizer(texts))[0]
    count = int(np.count_nonzero(token_ids))  # padding (0) only ever follows the words
    if count == 0:
        raise ExplainError("no words left after standardization (nothing to explain)")
    classifier, labels = classifier_of(model), labels_of(model)
    ids = token_ids[:count]
    probabilities = keras.ops.convert_to_numpy(classifier(ids[None, :], training=False))[0]
    c = target_class(labels, target, probabilities)
    variant = variants.variant_of_model(classifier.name)
    explains = variant.explains if variant is not None else "attention"
    branch = None  # a fused model's attention branch: its share of the margin
    bag = classifier.get_layer("bag") if explains != "attention" else None
    if explains == "contributions":
        _, shares = word_contributions(classifier, ids, c)
        layer, heads = variant.explained_as, 0
    else:
        explainer, layer = attention_model(classifier)
        _, weights = explainer(ids[None, :], training=False)
        weights = keras.ops.convert_to_numpy(weights)[0]
        read = weights.shape[-1]  # a fused model's attention branch reads the first words only
        received = np.zeros(count)
        received[:read] = attention_received(weights, np.ones(read, dtype=bool))
        heads = weights.shape[0]
        if explains == "contributions+attention":  # both branches: exact, each in its panel
            _, shares = word_contributions(classifier, ids, c)
            branch = branch_log_odds(classifier, ids, c=c)
        else:  # attention has no sign: the occlusion of each word says which way it pushes
            _, shares = word_occlusion(classifier, ids, c=c)
    probability = float(probabilities[c])
    if len(labels) == 2:
        label = labels[1] if float(probabilities[1]) >= threshold else labels[0]
    else:
        label = labels[int(np.argmax(probabilities))]

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
        attention=shares,
        probability=probability,
        label=label,
        layer=layer,
        heads=int(heads),
        dropped_words=max(0, len(words) - count),
        truncate=vectorizer.truncate,
        signed=True,
        weights=None if heads == 0 else received,
        branch_log_odds=branch,
        target=labels[c],
        against=labels[1 - c] if len(labels) == 2 else "",
        ngram_order=getattr(bag, "order", 2),
        scaled="NB-scaled" if getattr(bag, "scale_name", "idf") == "ratio" else "TF-IDF",
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
    model: keras.Model,
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
        explanation = explain_text(model, review.text, threshold, review.source, target)
    except ExplainError as error:
        reporter.error(review.source, str(error))
        return None
    target = Path(output) if output else default_output(path, output_format, explanation.kind)
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

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

A linear model (``bow``, ``explains="contributions"``) is its own explanation: each word is
shaded by its contribution to the log-odds of ``positive`` (:func:`word_contributions`),
signed, from red (towards negative) to blue (towards positive). Attention has no sign (a
strongly attended word may push either way), so an attention model's words are shaded the same
way by their occlusion (:func:`word_occlusion`: the log-odds with the word minus without it),
and the attention they receive is a second panel. A fused model (``nbow_attention``,
``explains="contributions+attention"``) shows its n-gram branch's word contributions, what its
attention branch adds to the log-odds (:func:`branch_log_odds`), and that branch's attention as
the second panel.

Example (a trained model; ``classify explain`` does this)::

    model = classifier.serving.registry.load_model("model.keras")
    explanation = explain_text(model, "A wonderful, moving film.")
    plots.plot_token_attention("review.png", **figure_arguments(explanation))
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import keras
import numpy as np
import tensorflow as tf

from classifier import plots
from classifier.config import variants
from classifier.data.pipeline import standardize_review
from classifier.errors import ExplainError, ModelError
from classifier.explain.views import Explanation, figure_arguments, write_html
from classifier.layers.ngrams import ngram_features
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


def target_class(
    labels: tuple[str, ...], target: str | None, probabilities: np.ndarray | None = None
) -> int:
    """The index of the class a review's words are weighed towards: ``target`` (a class name
    or index), else the second of two classes (``positive``), else the most probable.

    Raises:
        ModelError: ``target`` is not one of ``labels``; the line names them.

    Example:
        >>> target_class(("negative", "positive"), None), target_class(("a", "b", "c"), "c")
        (1, 2)
    """
    if target is not None:
        if target in labels:
            return labels.index(target)
        if target.isdigit() and int(target) < len(labels):
            return int(target)
        raise ModelError(
            f"--class {target!r} is not a class of the model; its classes: " + ", ".join(labels)
        )
    if len(labels) == 2 or probabilities is None:
        return 1
    return int(np.argmax(probabilities))


def margin_direction(matrix: np.ndarray, c: int) -> np.ndarray:
    """The combination of a head's K columns (or K logits, the last axis) that gives class
    ``c``'s margin: its logit minus the mean logit of the other classes. For two classes that
    is the log-odds of ``c``; softmax's probabilities rank the classes as the margins do.

    Example:
        >>> margin_direction(np.array([1.0, 3.0, 8.0]), 2).item()  # 8 - (1 + 3) / 2
        6.0
    """
    matrix = np.asarray(matrix, dtype=np.float64)
    others = np.delete(matrix, c, axis=-1)
    return matrix[..., c] - others.mean(axis=-1)


def word_occlusion(
    classifier: keras.Model, token_ids: np.ndarray, batch_size: int = 64, c: int = 1
) -> tuple[float, np.ndarray]:
    """P(class ``c``) of one review's ids (no padding), and per word how far it moves class
    ``c``'s margin (:func:`margin_direction` of the log-probabilities; the log-odds of positive
    for two classes): the margin of the review minus that of the review without the word (the
    words after it move up one place). Positive: the word pushes towards class ``c``.

    Example (a trained classifier)::

        probability, moves = word_occlusion(classifier, np.array([12, 845, 7]))
    """
    ids = np.asarray(token_ids, dtype=np.int64)
    n = len(ids)
    without = np.zeros((n, max(n - 1, 1)), dtype=np.int64)  # a one-word review: empty (padding)
    for i in range(n):
        without[i, : n - 1] = np.delete(ids, i)
    rows = np.concatenate([ids[None, :], np.pad(without, ((0, 0), (0, n - without.shape[1])))])
    probabilities = np.concatenate(
        [
            keras.ops.convert_to_numpy(classifier(rows[i : i + batch_size], training=False))
            for i in range(0, len(rows), batch_size)
        ]
    ).astype(np.float64)
    probabilities = np.clip(probabilities, 1e-12, 1.0)
    margins = margin_direction(np.log(probabilities), c)
    return float(probabilities[0, c]), margins[0] - margins[1:]


def word_contributions(
    classifier: keras.Model, token_ids: np.ndarray, c: int = 1
) -> tuple[float, np.ndarray]:
    """The sigmoid of class ``c``'s margin (for two classes, P(``c``)) of a bag-of-n-grams
    classifier (``bow``, ``nbow``) for one review's ids (no padding), and each word's
    contribution to that margin (the log-odds of positive for two classes,
    :func:`margin_direction`). Of a fused classifier (``nbow_attention``): the contributions of
    its n-gram branch (layer ``bag``), and the sigmoid of that branch's margin alone.

    A feature f (a word, or n neighbouring words) adds ``(value_f * k_f) . d`` to the margin,
    where ``value_f`` is its normalised value (TF-IDF, or NB-scaled; for more than two classes
    one per output, each class's one-vs-rest ratio), ``k_f`` its kernel row and ``d`` the
    head's margin direction (the temperature included). A word receives its
    unigram's share and 1/n of each n-gram's it is in, split evenly over repeats (a feature
    counts once). So the contributions sum to the log-odds minus the bias (the calibration's
    offset is in the bias): nothing is lost or invented.
    """
    bag, head = classifier.get_layer("bag"), classifier.get_layer("head")
    kernel, head_bias = (keras.ops.convert_to_numpy(w).astype(np.float64) for w in head.weights)
    direction = margin_direction(kernel, c)
    ids = np.asarray(token_ids, dtype=np.int64)[None, :]
    features, values = (keras.ops.convert_to_numpy(a)[0] for a in bag.feature_values(ids))
    if values.ndim == 1:  # one value per feature (two classes), else one per output (K NB ratios)
        values = values[:, None]
    rows = keras.ops.convert_to_numpy(bag.kernel).astype(np.float64)[features]  # (F, outputs)
    added = (values * rows) @ direction
    per_feature = {  # first occurrences only: a repeat's values are 0
        int(f): float(c) for f, c, v in zip(features, added, values.any(axis=1), strict=True) if v
    }
    order = getattr(bag, "order", 2)  # bow: words and pairs
    unsorted = ngram_features(ids, bag.vocab_size, bag.buckets, order)
    unsorted = keras.ops.convert_to_numpy(unsorted)[0].tolist()
    length, spans, offset = ids.shape[1], [], 0  # spans: (feature, first word, n)
    for n in range(1, order + 1):
        count = max(length - n + 1, 0)
        spans += [(f, start, n) for start, f in enumerate(unsorted[offset : offset + count])]
        offset += count
    times = Counter(f for f, _, _ in spans)
    shares = np.zeros(length)
    for feature, start, n in spans:
        shares[start : start + n] += per_feature.get(feature, 0.0) / times[feature] / n
    bias = keras.ops.convert_to_numpy(bag.bias).astype(np.float64) @ direction
    margin = float(shares.sum() + bias + margin_direction(head_bias, c))
    return float(1 / (1 + np.exp(-margin))), shares


def branch_log_odds(
    classifier: keras.Model, token_ids: np.ndarray, layer: str = "attention_logits", c: int = 1
) -> float:
    """What one branch of a fused classifier (``nbow_attention``) adds to class ``c``'s margin
    (the log-odds of positive for two classes) for one review's ids (no padding): the logits of
    its layer ``layer``, through the head's margin direction (the temperature included). The n-gram branch's word
    contributions (:func:`word_contributions`), its bias, the head's bias and this sum to the
    model's log-odds.

    Example (a trained ``nbow_attention`` classifier)::

        attention_part = branch_log_odds(classifier, np.array([12, 845, 7]))
    """
    kernel = keras.ops.convert_to_numpy(classifier.get_layer("head").kernel).astype(np.float64)
    branch = keras.Model(classifier.input, classifier.get_layer(layer).output)
    ids = np.asarray(token_ids, dtype=np.int64)[None, :]
    logits = keras.ops.convert_to_numpy(branch(ids, training=False))[0].astype(np.float64)
    return float(logits @ margin_direction(kernel, c))


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

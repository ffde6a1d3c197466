"""Export a trained end-to-end model as a TensorFlow-free inference bundle (LiteRT + vocabulary).

:func:`write_bundle` writes the folder that :func:`classifier.serving.litert_engine.load_bundle` reads
(the format is described there): the classifier part of the model (token ids in, probabilities
out) converted by LiteRT's converter from its call, with LiteRT's built-in ops only (no
TensorFlow "select" ops, which would need TensorFlow at run time), the vectorizer's vocabulary,
what ``classify explain`` reads (:mod:`classifier.serving.explain_parts`: an n-gram model's
weights, an attention model's attention weights as a second LiteRT model) and ``bundle.json``.
Before it returns, it loads the bundle back and checks that it computes
what the Keras model computes: the tokenizer gives the vectorizer's ids on tricky strings, and
the probabilities agree within :data:`TOLERANCE` on texts of every length from 0 to past
``sequence_length``, batched as ``classify predict`` batches them; so do the explain parts (the
n-gram features' NumPy twin, the attention weights) on a short and a long run of words.

Every variant exports (``tests/serving/test_bundle.py``). For the default model (10,000 words,
256 tokens, ``attention``, 16 dimensions) the folder holds 0.73 MB (``classifier.tflite`` 0.65
MB, ``vocabulary.txt`` 0.08 MB, ``bundle.json`` 1 kB) and ``attention.tflite`` about as much
again. A test-sized 1-layer ``encoder`` exports its two LiteRT models in 1.1 s and writes the
whole bundle, checks included, in 1.5 s (``benchmarks/run_fixed_cost.py``; 2.7 s through Keras'
export). The weights stay float32 (the embeddings are most of the file), so the numbers match
Keras to about 2e-7.

Example (a trained model; training does this for every run)::

    model = load_keras_model("model.keras")  # classifier.serving.registry
    write_bundle(model, Path("bundle"))  # Path('bundle')
    load_bundle("bundle").predict_texts(["A wonderful film."])  # [0.93]; classifier.serving.litert_engine
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from classifier.config.variants import Variant, variant_of_model
from classifier.data.vectorizer import ReviewVectorizer
from classifier.errors import ExplainError, ModelError, first_line
from classifier.models.explained import attention_model
from classifier.serving.explain_parts import (
    ATTENTION_FILE,
    NGRAMS_FILE,
    NgramWeights,
    load_explain_parts,
)
from classifier.serving.keras_engine import (
    classifier_of,
    labels_of,
    tokenizer_twin,
    vectorizer_of,
)
from classifier.serving.litert_engine import (
    BUNDLE_FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    MODEL_FILE,
    STANDARDIZATIONS,
    VOCABULARY_FILE,
    BundleModel,
    file_digest,
    load_bundle,
)
from classifier.serving.predict import predict_probabilities

TOLERANCE = 1e-5  # largest difference of a probability between the bundle and Keras
#: Strings whose token ids the bundle's tokenizer must give exactly as the model's vectorizer.
PROBES = [
    "",
    " ",
    "!!!",
    "Don't miss it!<br />Great.",
    "<BR/>a<br\t/>b<br />",
    "Not bad... at ALL! ;<br />Great;really ?:. x",
    "it's rock'n'roll, O'Brien's 'tis",
    "THE MoViE\twas\r\ngreat\x0bbut\x1cdull\x85ok\u2028fine",
    "ÉMIGRÉ émigré İstanbul STRAẞE ﬁlm café cafe\u0301",
    "“great” ‘movie’ — … a–b a’b ¡hola! «the»",
    "a\xa0b a\u3000b a\u200bb \ufeffthe 😀 a😀b",
    "1,000 10/10 <i>great</i> &amp;quot; x_y a-b \\ [UNK]",
    "Anything but dull, FAR  from it; nowhere near-perfect far_from anythingbut far\tfrom",
]


def write_bundle(end_to_end_model: keras.Model, folder: Path) -> Path:
    """Write the inference bundle of ``end_to_end_model`` into ``folder``; return ``folder``.

    Args:
        end_to_end_model: raw review strings in, class probabilities out: a
            :class:`~classifier.data.vectorizer.ReviewVectorizer` followed by a classifier
            (what training saves as ``model.keras``), loaded with ``safe_mode`` or freshly
            built.
        folder: created if needed; ``bundle.json`` is written last, so a bundle cut short has
            none and is refused when loaded.

    Raises:
        ModelError: the model is not a vectorizer followed by a classifier, LiteRT cannot
            convert it with built-in ops, or the bundle does not reproduce it.
    """
    folder = Path(folder)
    shown = f"model {end_to_end_model.name!r}"
    vectorizer = vectorizer_of(end_to_end_model)
    classifier = classifier_of(end_to_end_model)
    vocabulary = vectorizer.get_vocabulary()
    if any("\n" in token for token in vocabulary):  # never: tokens are split on whitespace
        raise ModelError(f"{shown}: a vocabulary token holds a line break")
    num_classes = int(classifier.outputs[0].shape[-1])
    labels = labels_of(end_to_end_model)
    if num_classes != len(labels):
        raise ModelError(f"{shown}: {num_classes} classes, but {len(labels)} class names")
    _check_standardization(vectorizer, shown)
    token_classifier = _any_length(classifier, shown)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / MANIFEST).unlink(missing_ok=True)
    _export_litert(token_classifier, folder / MODEL_FILE, shown)
    (folder / VOCABULARY_FILE).write_bytes("\n".join(vocabulary).encode("utf-8"))
    variant = variant_of_model(classifier.name)
    explain, explain_files, explainer = _write_explain_parts(classifier, variant, folder, shown)
    manifest = {
        "format": BUNDLE_FORMAT,
        "format_version": _format_version(vectorizer, explain),
        "model_name": end_to_end_model.name,
        "classifier_name": classifier.name,
        "variant": variant.name if variant else None,
        "sequence_length": int(vectorizer.sequence_length),
        "truncate": vectorizer.truncate,
        "standardization": standardization_of(vectorizer),
        **({"spelling": int(vectorizer.spelling)} if vectorizer.spelling else {}),
        "vocab_size": len(vocabulary),
        "num_classes": num_classes,
        "labels": list(labels),
        "input": {"name": "token_ids", "dtype": "int64", "shape": ["B", "T"]},
        "output": {"dtype": "float32", "shape": ["B", "num_classes"]},
        "files": {
            name: {"bytes": len(content), "sha256": file_digest(content)}
            for name in (MODEL_FILE, VOCABULARY_FILE, *explain_files)
            for content in [(folder / name).read_bytes()]
        },
        "explain": explain,
        "exported_with": {"tensorflow": tf.__version__, "keras": keras.__version__},
    }
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    try:
        bundle = load_bundle(folder)
        _check_reproduces(end_to_end_model, bundle, shown)
        if explain:
            _check_explains(classifier, explainer, bundle, shown)
    except BaseException:
        (folder / MANIFEST).unlink(missing_ok=True)  # never leave a wrong bundle loadable
        raise
    return folder


def standardization_of(vectorizer: ReviewVectorizer) -> str:
    """The name of ``vectorizer``'s standardization in a bundle's manifest."""
    kept = (vectorizer.sentences, vectorizer.negation_phrases)
    return next(name for name, what in STANDARDIZATIONS.items() if what == kept)


def _format_version(vectorizer: ReviewVectorizer, explain: dict | None) -> int:
    """The oldest :data:`FORMAT_VERSION` that holds what this bundle needs read."""
    if vectorizer.negation_phrases:
        return FORMAT_VERSION  # 4
    if (explain or {}).get("ngrams", {}).get("opening_contrast"):
        return 3
    return 2 if vectorizer.spelling else 1


def ngram_weights_of(classifier: keras.Model) -> NgramWeights:
    """The weights of a classifier's bag of n-grams (layer ``bag``) and its head, as NumPy.

    Raises:
        ValueError: the classifier has no layer ``bag``.
    """
    bag, head = classifier.get_layer("bag"), classifier.get_layer("head")
    numpy = keras.ops.convert_to_numpy
    return NgramWeights(
        vocab_size=int(bag.vocab_size),
        buckets=int(bag.buckets),
        order=int(getattr(bag, "order", 2)),
        scale_name=str(getattr(bag, "scale_name", "idf")),
        scale=numpy(bag.scale),
        kernel=numpy(bag.kernel),
        bias=numpy(bag.bias),
        head_kernel=numpy(head.kernel),
        head_bias=numpy(head.bias),
        negation=float(getattr(bag, "negation", 0.0)),
        contrast=float(getattr(bag, "contrast", 1.0)),
        negation_words=int(getattr(bag, "negation_words", 0)),
        short_length=int(getattr(bag, "short_length", 0)),
        letters=int(getattr(bag, "letters", 0)),
        letter_ids=numpy(bag.letter_ids) if getattr(bag, "letters", 0) else None,
        letter_weight=float(getattr(bag, "letter_weight", 1.0)),
        own_negated_letters=bool(getattr(bag, "own_negated_letters", True)),
        concessive=bool(getattr(bag, "concessive", False)),
        sentences_as_reviews=bool(getattr(bag, "sentences_as_reviews", False)),
        opening_contrast=bool(getattr(bag, "opening_contrast", False)),
    )


def _write_explain_parts(
    classifier: keras.Model, variant: Variant | None, folder: Path, shown: str
) -> tuple[dict | None, list[str], keras.Model | None]:
    """Write what ``classify explain`` reads (:mod:`classifier.serving.explain_parts`) into
    ``folder``: the bag's weights for n-gram models, the attention model as LiteRT for attention
    models. Return ``bundle.json``'s ``"explain"`` entry (None for a classifier of no known
    variant: Keras explains it, as before), the files written and the attention model."""
    if variant is None:
        return None, [], None
    model, files = None, []
    entry = {"explains": variant.explains, "layer": variant.explained_as}
    if variant.explains != "attention":
        weights = ngram_weights_of(classifier)
        described = ["vocab_size", "buckets", "order", "scale_name"]
        if weights.reads_scope:  # a bag that reads negation or contrast
            described += ["negation", "contrast", "negation_words"]
        if weights.short_length:  # a bag that reads sentences in a block of their own
            described += ["short_length", "letters"]
        if weights.letter_weight != 1:  # bundles of other bags stay as they were written
            described.append("letter_weight")
        if not weights.own_negated_letters:
            described.append("own_negated_letters")
        if weights.concessive:
            described.append("concessive")
        if weights.sentences_as_reviews:
            described.append("sentences_as_reviews")
        if weights.opening_contrast:
            described.append("opening_contrast")
        entry["ngrams"] = {name: getattr(weights, name) for name in described}
        arrays = {name: getattr(weights, name) for name in ("scale", "kernel", "bias")}
        if weights.letters:
            arrays["letter_ids"] = weights.letter_ids
        arrays |= {"head_kernel": weights.head_kernel, "head_bias": weights.head_bias}
        with open(folder / NGRAMS_FILE, "wb") as file:
            np.savez(file, **arrays)
        files.append(NGRAMS_FILE)
    if variant.explains != "contributions":
        try:
            model, entry["layer"] = attention_model(classifier)
        except ExplainError as error:
            raise ModelError(f"{shown}: {error}") from None
        _export_litert(model, folder / ATTENTION_FILE, shown)
        entry["attention"] = {"outputs": [str(output.shape) for output in model.outputs]}
        files.append(ATTENTION_FILE)
    return entry, files, model


def _any_length(classifier: keras.Model, shown: str) -> keras.Model:
    """The classifier on token ids of any length T (the bundle trims batches to their longest).

    Models saved before the classifiers took any length have an input of shape
    ``(sequence_length,)``; their layers take any length, so the same layers are wired to an
    input of shape ``(None,)``, as ``classifier.serving.predict`` does. A classifier whose layers need
    that exact length (none of the variants) is refused.
    """
    (token_ids,) = classifier.inputs
    if tuple(token_ids.shape)[1:] == (None,):
        return classifier
    try:
        any_length = keras.models.clone_model(
            classifier,
            input_tensors=keras.Input(shape=(None,), dtype="int64", name="token_ids"),
            clone_function=lambda layer: layer,  # share, do not copy
        )
        any_length(np.ones((1, 1), dtype=np.int64), training=False)
    except Exception as error:  # noqa: BLE001 - Keras raises many kinds for a bad shape
        raise ModelError(
            f"{shown}: its classifier takes exactly {token_ids.shape[1]} token ids, and a "
            f"bundle runs it on any number ({first_line(error)})"
        ) from None
    return any_length


def _export_litert(classifier: keras.Model, path: Path, shown: str) -> None:
    """Convert ``classifier`` to a LiteRT flatbuffer at ``path``: token ids (B, T) int64 in.

    The converter is given the model's call as a concrete function and freezes its variables
    into the graph; by default (``experimental_lower_to_saved_model``), and in
    ``model.export(format="litert")``, it writes a SavedModel and reads it back first, for a
    flatbuffer of the same ops in 2 to 4 times the time (``benchmarks/run_fixed_cost.py``)."""
    signature = [tf.TensorSpec((None, None), tf.int64, name="token_ids")]
    holder = tf.Module()  # tracks the variables that the converter freezes
    holder.held = [variable.value for variable in classifier.weights]
    holder.call = tf.function(
        lambda ids: classifier(ids, training=False), input_signature=signature, autograph=False
    )
    try:
        converter = tf.lite.TFLiteConverter.from_concrete_functions(
            [holder.call.get_concrete_function()], holder
        )
        # Built-in ops only: a TensorFlow "select" op would need TensorFlow to run.
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        converter.experimental_lower_to_saved_model = False
        with _tensorflow_warnings_off():
            content = converter.convert()
    except Exception as error:  # noqa: BLE001 - the converter raises many kinds
        raise ModelError(
            f"{shown}: LiteRT cannot convert its classifier ({first_line(error)})"
        ) from None
    path.write_bytes(content)


@contextlib.contextmanager
def _tensorflow_warnings_off() -> Iterator[None]:
    """TensorFlow's Python warnings off: freezing the classifier's graph warns that it skips
    the graph's ``table_initializer`` collection (a lookup table's, which the flatbuffer does
    not hold), "probably safe to ignore"."""
    logger = logging.getLogger("tensorflow")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _check_standardization(vectorizer: ReviewVectorizer, shown: str) -> None:
    """The bundle's tokenizer must give the vectorizer's ids: same standardization, same split."""
    if vectorizer.text_vectorization.get_config().get("split") != "whitespace":
        raise ModelError(f"{shown}: its vectorizer does not split on whitespace")
    vocabulary = vectorizer.get_vocabulary()
    words = " ".join(vocabulary[2:40] + [word.upper() for word in vocabulary[2:10]])
    swapped = [w[:1] + w[2:3] + w[1:2] + w[3:] for w in vocabulary[2:200]]  # misspelt
    probes = [*PROBES, words, words + " " + words * (vectorizer.sequence_length // 20 + 1)]
    probes += [" ".join(swapped[start : start + 8]) for start in range(0, len(swapped), 8)]
    expected = vectorizer(tf.constant(probes)).numpy()
    actual = tokenizer_twin(vectorizer).encode(probes)
    if not np.array_equal(expected, actual):
        bad = [probe for probe, e, a in zip(probes, expected, actual, strict=True) if any(e != a)]
        raise ModelError(
            f"{shown}: the TensorFlow-free tokenizer gives other ids than its vectorizer for "
            f"{len(bad)} probe(s), e.g. {bad[0][:60]!r}"
        )


def _check_reproduces(model: keras.Model, bundle: BundleModel, shown: str) -> None:
    """Compare the loaded bundle's probabilities, in batches of 1, 7 and 64, with Keras' on
    texts of every length (Keras' once: padding is masked, so its batches do not matter)."""
    vocabulary = np.asarray(bundle.tokenizer.vocabulary[1:])  # a list: converted every draw
    rng = np.random.default_rng(0)
    longest = bundle.sequence_length + 3
    texts = PROBES + [
        " ".join(rng.choice(vocabulary, size=length))
        for length in rng.permutation(np.arange(1, longest + 1))
    ]
    expected = predict_probabilities(model, texts, 64)
    for batch_size in (1, 7, 64):
        actual = predict_probabilities(bundle, texts, batch_size)
        worst = float(np.max(np.abs(expected - actual)))
        if not worst <= TOLERANCE:
            raise ModelError(
                f"{shown}: its LiteRT bundle differs from the Keras model by {worst:.2g} (batch "
                f"size {batch_size}; at most {TOLERANCE:g} is allowed)"
            )


def _check_explains(
    classifier: keras.Model,
    explainer: keras.Model | None,
    bundle: BundleModel,
    shown: str,
) -> None:
    """Read the loaded bundle's explain parts and compare them with Keras on a short and a long
    run of random words: the bag's features and values (the NumPy twin), the attention weights
    and a fused model's branch logits."""
    parts = load_explain_parts(bundle)
    rng = np.random.default_rng(1)
    for length in sorted({3, min(40, bundle.sequence_length)}):
        ids = rng.integers(1, len(bundle.tokenizer.vocabulary), size=(1, length))
        expected, actual = [], []
        if parts.ngrams is not None:
            bag = classifier.get_layer("bag")
            expected += [keras.ops.convert_to_numpy(a) for a in bag.feature_values(ids)]
            actual += list(parts.ngrams.feature_values(ids))
        if parts.attention is not None and explainer is not None:
            outputs = explainer(ids, training=False)
            outputs = outputs if isinstance(outputs, list | tuple) else [outputs]
            expected += [keras.ops.convert_to_numpy(output)[0] for output in outputs]
            actual += [a for a in parts.attention(ids[0]) if a is not None]
        for e, a in zip(expected, actual, strict=True):
            if e.shape != a.shape or not float(np.max(np.abs(e - a), initial=0.0)) <= TOLERANCE:
                raise ModelError(f"{shown}: its explain parts differ from the Keras model's")

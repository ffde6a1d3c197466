"""The LiteRT inference bundle: written from every variant, read without TensorFlow, giving
the Keras model's probabilities; bad bundles refused with one line."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import keras
import numpy as np
import pytest

from classifier.config import variants
from classifier.config.negation import reserved_words
from classifier.config.schema import ModelConfig
from classifier.data.vectorizer import ReviewVectorizer
from classifier.errors import ModelError
from classifier.explain.explanation import explain_text
from classifier.explain.keras_view import KerasView
from classifier.models.classifier import build_classifier, build_end_to_end
from classifier.serving.bundle import write_bundle
from classifier.serving.explain_parts import ATTENTION_FILE, NGRAMS_FILE
from classifier.serving.keras_engine import classifier_of, labels_of, vectorizer_of
from classifier.serving.litert_engine import (
    MANIFEST,
    MODEL_FILE,
    VOCABULARY_FILE,
    BundleModel,
    file_digest,
    is_bundle,
    load_bundle,
)
from classifier.serving.predict import (
    classify_files,
    predict_probabilities,
    predict_texts,
    tokenizer_of,
)
from classifier.serving.registry import load_keras_model
from tests.conftest import ROOT
from tests.model_helpers import NEGATIVE, POSITIVE, untrained

# Keras warns that a softmax over one key is always 1: width-1 batches are meant here.
pytestmark = [
    pytest.mark.filterwarnings("ignore:You are using a softmax over axis"),
    pytest.mark.slow,  # a LiteRT export of every variant: 80 s of CPU
]
SEQUENCE_LENGTH = 12
WORDS = ["great", "awful", "film", "the", "plot", "wonderful", "dull"]


def texts() -> list[str]:
    """Reviews of every length from 0 to past SEQUENCE_LENGTH, and tricky ones."""
    rng = np.random.default_rng(7)
    pool = [*WORDS, "unknown", "Great!", "DULL,", "the<br />plot"]
    made = [
        " ".join(rng.choice(pool, size=n)) for n in range(1, 3 * SEQUENCE_LENGTH) for _ in (0, 1)
    ]
    return [
        "",  # nothing at all
        "!!! ... ?",  # empty after standardization
        "<br /><br />",
        "great",  # one word
        "Unknown.",  # one word, out of vocabulary
        "wonderful great " + "awful dull " * SEQUENCE_LENGTH,  # head and tail differ
        "awful dull " * SEQUENCE_LENGTH + "wonderful great",
        "Émigré café 😀 the\tfilm\nwas great",
        POSITIVE,
        NEGATIVE,
        *made,
    ]


#: Standard deviation of the random weights: the probabilities spread over (0, 1) without
#: logits so large that float32 rounding shows (``mha`` has no normalization to tame them).
WEIGHT_SCALE = {"attention": 0.6, "mha": 0.3}


def spread(model: keras.Model, seed: int = 0) -> keras.Model:
    """Random weights large enough that the probabilities spread over (0, 1)."""
    classifier = classifier_of(model) if len(model.layers) > 2 else model
    variant = classifier.name.removeprefix("imdb_")
    scale = WEIGHT_SCALE.get(variant, 1.0)
    rng = np.random.default_rng(seed)
    model.set_weights(
        [rng.normal(0.0, scale, w.shape).astype(w.dtype) for w in model.get_weights()]
    )
    return model


def saved_and_loaded(model: keras.Model, folder: Path) -> keras.Model:
    """``model`` after a round trip through the project's ``.keras`` format, safe_mode on."""
    path = folder / "model.keras"
    model.save(path)
    return load_keras_model(path)


def head_truncating(variant: str) -> keras.Model:
    vectorizer = ReviewVectorizer(len(WORDS) + 2, SEQUENCE_LENGTH, "head", WORDS)
    return build_end_to_end(vectorizer, classifier_of(untrained(variant, SEQUENCE_LENGTH)))


def assert_same_probabilities(keras_model: keras.Model, bundle: BundleModel) -> None:
    reviews = texts()
    for batch_size in (1, 5, 64):
        expected = np.array(predict_texts(keras_model, reviews, batch_size))
        actual = np.array(bundle.predict_texts(reviews, batch_size))
        np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-5)
    assert np.std(expected) > 0.02, "the weights give near-constant probabilities: a weak test"


def assert_same_explanations(
    keras_model: keras.Model, bundle: BundleModel, target: str | None = None
) -> None:
    """``classify explain``'s figures from the bundle (no TensorFlow) are the Keras model's
    within 1e-5: probability, each word's push, the attention received, a branch's share."""
    reviews = [POSITIVE, NEGATIVE, "great", "awful dull " * SEQUENCE_LENGTH + "wonderful great"]
    pushes = []
    for text in reviews:
        expected = explain_text(keras_model, text, target=target)
        actual = explain_text(bundle, text, target=target)
        assert (actual.tokens, actual.in_vocabulary, actual.label, actual.target) == (
            expected.tokens,
            expected.in_vocabulary,
            expected.label,
            expected.target,
        )
        assert (actual.layer, actual.kind, actual.heads, actual.scaled, actual.ngram_order) == (
            expected.layer,
            expected.kind,
            expected.heads,
            expected.scaled,
            expected.ngram_order,
        )
        assert actual.probability == pytest.approx(expected.probability, abs=1e-5)
        np.testing.assert_allclose(actual.attention, expected.attention, rtol=0, atol=1e-5)
        assert (actual.weights is None) == (expected.weights is None)
        if expected.weights is not None:
            np.testing.assert_allclose(actual.weights, expected.weights, rtol=0, atol=1e-5)
        assert (actual.branch_log_odds is None) == (expected.branch_log_odds is None)
        if expected.branch_log_odds is not None:
            assert actual.branch_log_odds == pytest.approx(expected.branch_log_odds, abs=1e-5)
        pushes.append(np.abs(expected.attention).max())
    assert max(pushes) > 0.05, "the words barely push: a weak test"


@pytest.fixture(scope="module")
def attention_bundle(tmp_path_factory) -> tuple[keras.Model, Path]:
    model = spread(untrained("attention", SEQUENCE_LENGTH))
    return model, write_bundle(model, tmp_path_factory.mktemp("bundle") / "attention")


# --- every variant, any shape, the same numbers ---------------------------------------------


@pytest.mark.parametrize("variant", variants.names())
def test_every_variant_saved_and_loaded_gives_the_keras_probabilities_and_explanations(
    variant, tmp_path
):
    model = saved_and_loaded(spread(untrained(variant, SEQUENCE_LENGTH)), tmp_path)
    folder = write_bundle(model, tmp_path / "bundle")
    explains = variants.get(variant).explains
    parts = [NGRAMS_FILE] * (explains != "attention") + [ATTENTION_FILE] * ("attention" in explains)
    assert sorted(path.name for path in folder.iterdir()) == sorted(
        [MANIFEST, MODEL_FILE, VOCABULARY_FILE, *parts]
    )
    bundle = load_bundle(folder)
    assert_same_explanations(model, bundle)
    assert (bundle.variant, bundle.sequence_length, bundle.truncate) == (variant, 12, "tail")
    assert bundle.labels == ("negative", "positive")
    assert_same_probabilities(model, bundle)
    # Token ids of any length 1..T and any batch size 1..64, padding included.
    classifier = classifier_of(model)
    rng = np.random.default_rng(1)
    for batch in (1, 2, 13, 64):
        for width in range(1, SEQUENCE_LENGTH + 1):
            ids = rng.integers(0, len(WORDS) + 2, size=(batch, width))
            ids[0, width // 2 :] = 0  # a padded row
            expected = classifier(ids, training=False).numpy()
            np.testing.assert_allclose(bundle.predict_ids(ids), expected, rtol=0, atol=1e-5)


@pytest.mark.parametrize("variant", variants.names())
def test_every_variant_of_three_classes_carries_its_names_into_the_bundle(variant, tmp_path):
    labels = ("very bad", "so-so", "très bien")
    model = saved_and_loaded(spread(untrained(variant, SEQUENCE_LENGTH, labels)), tmp_path)
    assert labels_of(model) == labels
    bundle = load_bundle(write_bundle(model, tmp_path / "bundle"))
    assert bundle.labels == labels
    reviews = texts()
    for batch_size in (1, 64):
        expected = predict_probabilities(model, reviews, batch_size)
        actual = predict_probabilities(bundle, reviews, batch_size)
        assert expected.shape == (len(reviews), 3)
        np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-5)
    np.testing.assert_allclose(expected.sum(axis=1), 1.0, atol=1e-5)
    assert np.std(expected) > 0.02, "near-constant probabilities: a weak test"
    assert_same_explanations(model, bundle)  # towards the predicted class
    assert_same_explanations(model, bundle, target="so-so")


def test_an_imdb_model_has_no_class_names_layer_and_the_imdb_names():
    model = untrained("attention", SEQUENCE_LENGTH)
    assert [type(layer).__name__ for layer in model.layers][-1] == "Functional"
    assert labels_of(model) == ("negative", "positive")


@pytest.mark.parametrize("variant", ["attention", "encoder"])
def test_head_truncation(variant, tmp_path):
    model = spread(head_truncating(variant), seed=3)
    bundle = load_bundle(write_bundle(model, tmp_path / "bundle"))
    assert bundle.truncate == "head"
    assert_same_probabilities(model, bundle)
    first, last = bundle.predict_texts(texts()[5:7])
    assert first != pytest.approx(last, abs=1e-4)  # the kept end decides


def test_a_model_saved_with_a_fixed_length_input(tmp_path):
    """Older models take exactly T tokens: the same layers are exported for any length."""
    inner = spread(untrained("attention", SEQUENCE_LENGTH))
    classifier = classifier_of(inner)
    fixed = keras.models.clone_model(
        classifier,
        input_tensors=keras.Input(shape=(SEQUENCE_LENGTH,), dtype="int64", name="token_ids"),
        clone_function=lambda layer: layer,
    )
    vectorizer = ReviewVectorizer(len(WORDS) + 2, SEQUENCE_LENGTH, "tail", WORDS)
    model = saved_and_loaded(build_end_to_end(vectorizer, fixed), tmp_path)
    bundle = load_bundle(write_bundle(model, tmp_path / "bundle"))
    assert_same_probabilities(model, bundle)


def test_a_sentences_model_names_its_standardization_and_reads_back_the_same_ids(tmp_path):
    vectorizer = ReviewVectorizer(2 + len(reserved_words()) + 9, SEQUENCE_LENGTH, sentences=True)
    vectorizer.adapt(np.array(texts()))
    cfg = ModelConfig(variant="attention", embed_dim=8, num_heads=2, ff_dim=8, num_layers=2)
    classifier = build_classifier(cfg, vectorizer.vocab_size, SEQUENCE_LENGTH, 2)
    model = saved_and_loaded(spread(build_end_to_end(vectorizer, classifier)), tmp_path)
    folder = write_bundle(model, tmp_path / "bundle")
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["standardization"] == "imdb-review-v1-sentences"
    bundle = load_bundle(folder)
    reviews = [*texts(), "Not great. But dull!"]
    expected = vectorizer_of(model)(np.array(reviews)).numpy()
    vocabulary = bundle.tokenizer.vocabulary
    great, dull = vocabulary.index("great"), vocabulary.index("dull")
    assert vocabulary[2:5] == [".", ",", "not"] and min(great, dull) >= 40
    assert expected[-1].tolist() == [4, great, 2, 33, dull, 2] + [0] * 6  # not great . but dull .
    for tokenizer in (bundle.tokenizer, tokenizer_of(model), KerasView(model).tokenizer):
        assert tokenizer.sentences is True
        np.testing.assert_array_equal(tokenizer.encode(reviews), expected)
    assert_same_probabilities(model, bundle)
    _rewrite_manifest(folder, standardization="imdb-review-v1")  # read as the plain one
    assert load_bundle(folder).tokenizer.encode(["great. dull"])[0, :3].tolist() == [great, dull, 0]


@pytest.mark.parametrize("concessive", [False, True])
def test_an_nbow_that_reads_negation_runs_in_litert_and_explains_without_tensorflow(
    tmp_path, concessive
):  # with concessive, the sentence before an opening "But" turns too (opening_contrast)
    vectorizer = ReviewVectorizer(2 + len(reserved_words()) + 9, SEQUENCE_LENGTH, sentences=True)
    vectorizer.adapt(np.array(texts()))
    cfg = ModelConfig(
        variant="nbow",
        ngram_buckets=97,
        negation=0.5,
        contrast=0.25,
        concessive=concessive,
        opening_contrast=concessive,
    )
    classifier = build_classifier(cfg, vectorizer.vocab_size, SEQUENCE_LENGTH, 2)
    model = saved_and_loaded(spread(build_end_to_end(vectorizer, classifier)), tmp_path)
    assert classifier_of(model).get_layer("bag").negation == 0.5  # as saved
    folder = write_bundle(model, tmp_path / "bundle")  # checks the twin and LiteRT against Keras
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["explain"]["ngrams"] == {
        "vocab_size": 49, "buckets": 97, "order": 3, "scale_name": "ratio",
        "negation": 0.5, "contrast": 0.25, "negation_words": 0,
        **({"concessive": True, "opening_contrast": True} if concessive else {}),
    }  # fmt: skip
    assert manifest["format_version"] == (3 if concessive else 1)
    bundle = load_bundle(folder)
    assert_same_probabilities(model, bundle)
    for review in ("The plot was not dull. But great", "Although the plot was dull, great"):
        from_bundle, from_keras = explain_text(bundle, review), explain_text(model, review)
        assert from_bundle.tokens == from_keras.tokens
        np.testing.assert_allclose(from_bundle.attention, from_keras.attention, atol=1e-5)


@pytest.mark.parametrize(
    ("letter_weight", "own_letters", "as_reviews"), [(1.0, True, False), (4.0, False, True)]
)
def test_an_nbow_that_reads_sentences_and_their_letters_runs_in_litert_and_explains(
    tmp_path, letter_weight, own_letters, as_reviews
):
    vectorizer = ReviewVectorizer(2 + len(reserved_words()) + 9, SEQUENCE_LENGTH, sentences=True)
    vectorizer.adapt(np.array(texts()))
    cfg = ModelConfig(
        variant="nbow", ngram_buckets=97, negation=0.5, contrast=0.25, short_length=6, letters=5,
        letter_weight=letter_weight, own_negated_letters=own_letters,
        sentences_as_reviews=as_reviews,
    )  # fmt: skip
    classifier = build_classifier(cfg, vectorizer.vocab_size, SEQUENCE_LENGTH, 2)
    model = spread(build_end_to_end(vectorizer, classifier))
    classifier_of(model).get_layer("bag").set_letters(vectorizer.get_vocabulary())  # not random
    model = saved_and_loaded(model, tmp_path)
    assert keras.ops.convert_to_numpy(classifier_of(model).get_layer("bag").letter_ids).any()
    folder = write_bundle(model, tmp_path / "bundle")  # checks the twin and LiteRT against Keras
    manifest = json.loads((folder / MANIFEST).read_text())
    weighted = {} if own_letters else {"letter_weight": 4.0, "own_negated_letters": False}
    weighted |= {"sentences_as_reviews": True} if as_reviews else {}
    assert manifest["explain"]["ngrams"] == {
        "vocab_size": 49, "buckets": 97, "order": 3, "scale_name": "ratio",
        "negation": 0.5, "contrast": 0.25, "negation_words": 0, "short_length": 6, "letters": 5,
        **weighted,
    }  # fmt: skip
    bundle = load_bundle(folder)
    assert_same_probabilities(model, bundle)
    for review in ("not dull. But great", "The plot was not dull. But great and the film"):
        from_bundle, from_keras = explain_text(bundle, review), explain_text(model, review)
        assert from_bundle.tokens == from_keras.tokens
        np.testing.assert_allclose(from_bundle.attention, from_keras.attention, atol=1e-5)


def negation_bag_bundle(vectorizer: ReviewVectorizer, folder: Path):
    """An ``nbow`` reading negation behind ``vectorizer``, saved and loaded in Keras' format,
    and its bundle (whose writing checks the tokenizer's ids against the vectorizer's):
    ``(model, bundle folder, manifest)``."""
    cfg = ModelConfig(variant="nbow", ngram_buckets=97, negation=0.5, contrast=0.25)
    classifier = build_classifier(cfg, vectorizer.vocab_size, SEQUENCE_LENGTH, 2)
    model = saved_and_loaded(spread(build_end_to_end(vectorizer, classifier)), folder)
    bundle = write_bundle(model, folder / "bundle")
    return model, bundle, json.loads((bundle / MANIFEST).read_text())


def test_a_model_that_corrects_spelling_serves_misspelt_words_as_keras_reads_them(tmp_path):
    vectorizer = ReviewVectorizer(2 + len(reserved_words()) + 9, SEQUENCE_LENGTH, sentences=True)
    vectorizer.adapt(np.array(texts()))
    vectorizer = ReviewVectorizer(
        vectorizer.vocab_size, SEQUENCE_LENGTH, vocabulary=vectorizer.get_vocabulary()[2:],
        sentences=True, spelling=6,
    )  # fmt: skip
    model, folder, manifest = negation_bag_bundle(vectorizer, tmp_path)  # misspelt probes too
    assert (manifest["format_version"], manifest["spelling"]) == (2, 6)
    bundle = load_bundle(folder)
    typed = ["The plot was wondreful", "the plto was not dull", "Wonderfull, great film"]
    right = ["The plot was wonderful", "the plot was not dull", "Wonderful, great film"]
    for tokenizer in (bundle.tokenizer, tokenizer_of(model), KerasView(model).tokenizer):
        assert tokenizer.spelling == 6
        np.testing.assert_array_equal(tokenizer.encode(typed), tokenizer.encode(right))
    np.testing.assert_allclose(predict_texts(bundle, typed), predict_texts(model, right), atol=1e-5)
    for explained in (explain_text(bundle, typed[0]), explain_text(model, typed[0])):
        assert explained.tokens == ["the", "plot", "was", "wondreful (wonderful)"]
        assert explained.in_vocabulary == [True, True, False, True]  # "was": not among WORDS


def test_a_model_that_reads_negation_phrases_serves_and_explains_them_as_keras_does(tmp_path):
    words = ["far", "anything", "nowhere", "near", "from", "but"]
    vectorizer = ReviewVectorizer(
        2 + len(reserved_words()) + len(WORDS) + 4, SEQUENCE_LENGTH,
        vocabulary=reserved_words() + WORDS + words[:4], sentences=True, negation_phrases=True,
    )  # fmt: skip
    model, folder, manifest = negation_bag_bundle(vectorizer, tmp_path)  # the phrase probe too
    assert manifest["format_version"] == 4
    assert manifest["standardization"] == "imdb-review-v1-sentences-negation-phrases"
    bundle = load_bundle(folder)
    typed = ["The plot was far from dull", "anything but great", "nowhere near as great"]
    read = ["The plot was far not dull", "anything not great", "nowhere not as great"]
    for tokenizer in (bundle.tokenizer, tokenizer_of(model), KerasView(model).tokenizer):
        assert tokenizer.negation_phrases is True
        np.testing.assert_array_equal(tokenizer.encode(typed), tokenizer.encode(read))
    np.testing.assert_allclose(predict_texts(bundle, typed), predict_texts(model, read), atol=1e-5)
    for explained in (explain_text(bundle, typed[0]), explain_text(model, typed[0])):
        assert explained.tokens == ["the", "plot", "was", "far", "from (not)", "dull"]
    _rewrite_manifest(folder, format_version=3, standardization="imdb-review-v1-sentences")
    far = bundle.tokenizer.vocabulary.index("far")
    assert load_bundle(folder).tokenizer.encode(["far from"])[0, :2].tolist() == [far, 1]


def test_a_classifier_that_needs_its_exact_length_is_refused(tmp_path):
    token_ids = keras.Input(shape=(SEQUENCE_LENGTH,), dtype="int64", name="token_ids")
    x = keras.layers.Embedding(len(WORDS) + 2, 4)(token_ids)
    x = keras.layers.Flatten()(x)  # needs exactly SEQUENCE_LENGTH positions
    probabilities = keras.layers.Dense(2, activation="softmax")(x)
    flat = keras.Model(token_ids, probabilities, name="imdb_flat")
    vectorizer = ReviewVectorizer(len(WORDS) + 2, SEQUENCE_LENGTH, "tail", WORDS)
    with pytest.raises(ModelError, match="takes exactly 12 token ids"):
        write_bundle(build_end_to_end(vectorizer, flat), tmp_path / "bundle")


def test_the_bundle_is_small_and_describes_itself(attention_bundle):
    _, folder = attention_bundle
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["format_version"] == 1 and manifest["standardization"] == "imdb-review-v1"
    assert (manifest["sequence_length"], manifest["truncate"]) == (SEQUENCE_LENGTH, "tail")
    assert (manifest["num_classes"], manifest["vocab_size"]) == (2, len(WORDS) + 2)
    assert (manifest["variant"], manifest["model_name"]) == ("attention", "imdb_sentiment")
    for name in (MODEL_FILE, VOCABULARY_FILE):
        content = (folder / name).read_bytes()
        assert manifest["files"][name] == {"bytes": len(content), "sha256": file_digest(content)}
    assert (folder / VOCABULARY_FILE).read_text().split("\n") == ["", "[UNK]", *WORDS]
    assert (folder / MODEL_FILE).stat().st_size < 20_000
    assert is_bundle(folder) and not is_bundle(folder.parent)


def test_token_ids_wider_than_the_sequence_length_are_refused(attention_bundle):
    bundle = load_bundle(attention_bundle[1])
    assert bundle.predict_ids(np.zeros((3, SEQUENCE_LENGTH), dtype=np.int64)).shape == (3, 2)
    for shape in [(1, SEQUENCE_LENGTH + 1), (2, 0), (4,)]:
        with pytest.raises(ValueError, match="token ids must have shape"):
            bundle.predict_ids(np.zeros(shape, dtype=np.int64))
    assert bundle.predict_texts([]) == []


# --- classify and classify_files take a bundle as they take a Keras model ---------------------


def test_classify_files_with_a_bundle_prints_what_the_keras_model_prints(
    attention_bundle, tmp_path
):
    model, folder = attention_bundle
    path = tmp_path / "reviews.txt"
    path.write_text("\n".join(text for text in texts() if text.strip()) + "\n")
    printed = {}
    for name, which in (("keras", model), ("bundle", load_bundle(folder))):
        lines, errors = [], []
        failed = classify_files(
            which, [str(path)], per_line=True, output_format="csv", batch_size=5,
            out=lines.append, err=errors.append,
        )  # fmt: skip
        assert (failed, errors) == (0, [])
        printed[name] = lines
    keras_rows, bundle_rows = (list(csv.reader(lines)) for lines in printed.values())
    assert len(bundle_rows) > 60
    assert [row[:2] for row in bundle_rows] == [row[:2] for row in keras_rows]  # sources, labels
    np.testing.assert_allclose(
        [float(row[2]) for row in bundle_rows[1:]],
        [float(row[2]) for row in keras_rows[1:]],
        rtol=0,
        atol=2e-6,  # 6 decimals, rounded either way
    )


def test_the_fast_module_imports_no_tensorflow_keras_or_mlflow(attention_bundle):
    model, folder = attention_bundle
    code = textwrap.dedent(
        f"""
        import sys
        from classifier.serving.litert_engine import load_bundle
        print(load_bundle({str(folder)!r}).predict_texts([{POSITIVE!r}])[0])
        heavy = ("tensorflow", "keras", "mlflow", "tensorflow_datasets", "tf_keras", "jax", "torch")
        print(sorted({{name.split(".")[0] for name in sys.modules}} & set(heavy)))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # not even LiteRT's note that it uses XNNPACK
    probability, imported = done.stdout.strip().splitlines()
    assert imported == "[]"
    assert float(probability) == pytest.approx(predict_texts(model, [POSITIVE])[0], abs=1e-5)


# --- bad bundles: one ModelError line naming the bundle ------------------------------------------


def _copy(folder: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(folder, tmp_path / "copy"))


def _rewrite_manifest(folder: Path, **changes) -> None:
    manifest = json.loads((folder / MANIFEST).read_text())
    manifest.update(changes)
    (folder / MANIFEST).write_text(json.dumps(manifest))


def _refused(path: Path, *fragments: str) -> str:
    with pytest.raises(ModelError) as raised:
        load_bundle(path)
    message = str(raised.value)
    assert "\n" not in message and f"model bundle {path}" in message, message
    for fragment in fragments:
        assert fragment in message, message
    return message


def test_a_missing_bundle(tmp_path):
    _refused(tmp_path / "nowhere", "no such folder")
    (tmp_path / "file").write_text("x")
    _refused(tmp_path / "file", "not a folder")
    _refused(tmp_path, f"not a model bundle (no {MANIFEST}")


def test_a_bundle_json_that_is_not_one(attention_bundle, tmp_path):
    folder = _copy(attention_bundle[1], tmp_path)
    (folder / MANIFEST).write_text("{not json")
    _refused(folder, f"unreadable {MANIFEST}")
    (folder / MANIFEST).write_text('{"format": "something-else"}')
    _refused(folder, "is not that of a")


def test_a_newer_format_or_another_standardization(attention_bundle, tmp_path):
    folder = _copy(attention_bundle[1], tmp_path)
    _rewrite_manifest(folder, format_version=5)
    _refused(folder, "format version 5", "reads up to 4")
    _rewrite_manifest(folder, format_version=1, standardization="imdb-review-v2")
    _refused(folder, "standardization 'imdb-review-v2'")
    _rewrite_manifest(folder, standardization="imdb-review-v1", truncate="middle")
    _refused(folder, "impossible values", "'middle'")


def test_a_missing_or_changed_file(attention_bundle, tmp_path):
    folder = _copy(attention_bundle[1], tmp_path)
    (folder / VOCABULARY_FILE).unlink()
    _refused(folder, f"{VOCABULARY_FILE} is missing")
    folder = _copy(attention_bundle[1], tmp_path / "b")
    content = (folder / MODEL_FILE).read_bytes()
    (folder / MODEL_FILE).write_bytes(content[: len(content) // 2])  # cut short
    _refused(folder, f"{MODEL_FILE} changed since the bundle was written", "export it again")
    (folder / MODEL_FILE).write_bytes(content[:-1] + bytes([content[-1] ^ 1]))  # one bit
    _refused(folder, "SHA-256")


def test_a_model_file_litert_cannot_read(attention_bundle, tmp_path):
    folder = _copy(attention_bundle[1], tmp_path)
    garbage = b"not a flatbuffer at all" * 10
    (folder / MODEL_FILE).write_bytes(garbage)
    files = {
        MODEL_FILE: {"bytes": len(garbage), "sha256": file_digest(garbage)},
        VOCABULARY_FILE: json.loads((folder / MANIFEST).read_text())["files"][VOCABULARY_FILE],
    }
    _rewrite_manifest(folder, files=files)
    _refused(folder, f"{MODEL_FILE} is not a LiteRT model")


def test_write_bundle_refuses_what_is_not_an_end_to_end_model():
    with pytest.raises(ModelError):
        write_bundle(classifier_of(untrained("attention")), Path("unused"))

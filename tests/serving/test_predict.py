"""``classify predict`` with a tiny model trained here on fixture data: every output format,
every bad input and its exit code, big files, and fast prediction in batches of similar length.

One model is trained per module into a temporary MLflow store and registered under the default
name, so the command finds it without ``--model``.
"""

from __future__ import annotations

import csv
import gc
import io
import json
import os
import weakref
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from classifier.config.schema import ModelConfig
from classifier.data.tokenizer import Tokenizer
from classifier.data.vectorizer import ReviewVectorizer
from classifier.models.classifier import build_classifier, build_end_to_end
from classifier.serving import batching
from classifier.serving import keras_engine as keras_predict
from classifier.serving import predict as predict_module
from classifier.serving import reviews as reviews_module
from classifier.serving.predict import predict_texts
from classifier.serving.registry import load_keras_model
from classifier.serving.reviews import Review
from tests.model_helpers import (
    BIG,
    NEGATIVE,
    POSITIVE,
    err_lines,
    run,
    table_rows,
    tensorflow_log,
    untrained,
)

ROOT = Path(__file__).resolve().parents[2]

# --- output formats --------------------------------------------------------------------------


def test_table_with_the_default_model(trained, reviews):
    result = run("predict", str(reviews["pos"]), str(reviews["neg"]))
    assert result.exit_code == 0, result.output
    rows = table_rows(result)
    assert [(label, known, source) for label, _, known, source in rows] == [
        ("positive", "100%", str(reviews["pos"])),
        ("negative", "91%", str(reviews["neg"])),  # 'i' is not in the fixture's vocabulary
    ]
    assert float(rows[0][1].lstrip("<>")) > 0.5 > float(rows[1][1].lstrip("<>"))  # <0.0001 too
    assert result.stderr == ""


def test_json_per_line_sources_and_probabilities(trained, model, reviews):
    result = run("predict", "--per-line", "--format", "json", str(reviews["lines"]))
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    lines = str(reviews["lines"])
    assert [row["source"] for row in rows] == [f"{lines}:1", f"{lines}:3", f"{lines}:4"]
    assert [row["label"] for row in rows] == ["negative", "positive", "negative"]
    expected = predict_texts(model, [NEGATIVE, POSITIVE, NEGATIVE])
    assert [row["positive_probability"] for row in rows] == pytest.approx(expected, abs=1e-6)
    assert set(rows[0]) == {"source", "label", "positive_probability", "known_share"}


def test_csv_and_stdin(trained, reviews):
    text = f"{POSITIVE}\n{NEGATIVE}\n".encode()
    result = run("predict", "--format", "csv", "--per-line", "-", stdin=text)
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [(r["source"], r["label"]) for r in rows] == [
        ("<stdin>:1", "positive"),
        ("<stdin>:2", "negative"),
    ]
    whole = run("predict", "--format", "csv", "-", str(reviews["neg"]), stdin=POSITIVE.encode())
    rows = list(csv.DictReader(io.StringIO(whole.stdout)))
    assert [(r["source"], r["label"]) for r in rows] == [
        ("<stdin>", "positive"),
        (str(reviews["neg"]), "negative"),
    ]


def test_a_source_with_a_comma_is_quoted_in_csv(trained, tmp_path):
    path = tmp_path / "a, b.txt"
    path.write_text(POSITIVE)
    rows = list(csv.DictReader(io.StringIO(run("predict", "--format", "csv", str(path)).stdout)))
    assert rows[0]["source"] == str(path)


def test_threshold_and_batch_size(trained, reviews):
    args = ["predict", "--per-line", "--format", "json", str(reviews["lines"])]
    default = json.loads(run(*args).stdout)
    assert json.loads(run(*args, "--batch-size", "1").stdout) == default
    everything = json.loads(run(*args, "--threshold", "0").stdout)
    assert {row["label"] for row in everything} == {"positive"}
    top = max(row["positive_probability"] for row in default)
    nothing = json.loads(run(*args, "--threshold", str(min(1.0, top + 1e-3))).stdout)
    assert {row["label"] for row in nothing} == {"negative"}


def test_many_reviews_in_batches_keep_their_order(trained, tmp_path):
    path = tmp_path / "many.txt"
    path.write_text("".join(f"{POSITIVE if i % 3 else NEGATIVE} {i}\n" for i in range(700)))
    result = run("predict", "--per-line", "--format", "csv", "--batch-size", "64", str(path))
    assert result.exit_code == 0
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [r["source"] for r in rows] == [f"{path}:{i + 1}" for i in range(700)]
    assert [r["label"] == "positive" for r in rows] == [bool(i % 3) for i in range(700)]


def test_help_has_examples():
    for command in ("predict", "explain"):
        result = run(command, "--help")
        assert result.exit_code == 0 and "Example" in result.output
        assert "--model" in result.output


# --- bad inputs: one line each, the others still classified ----------------------------------


def test_every_bad_input_at_once(trained, reviews, tmp_path, monkeypatch):
    folder = tmp_path / "folder"
    folder.mkdir()
    empty, blank = tmp_path / "empty.txt", tmp_path / "blank.txt"
    empty.write_bytes(b"")
    blank.write_text("  \n\t \n")
    locked = tmp_path / "locked.txt"
    locked.write_text(POSITIVE)
    _make_unreadable(locked, monkeypatch)
    missing = tmp_path / "missing.txt"
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("a great film, superb and moving. Caf\xe9!".encode("latin-1"))
    args = [missing, reviews["pos"], folder, locked, empty, blank, latin1, reviews["neg"]]
    result = run("predict", "--format", "csv", *map(str, args))
    assert result.exit_code == 1
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [(r["source"], r["label"]) for r in rows] == [
        (str(reviews["pos"]), "positive"),
        (str(latin1), "positive"),
        (str(reviews["neg"]), "negative"),
    ]
    assert err_lines(result) == [
        f"classify: {missing}: no such file",
        f"classify: {folder}: is a directory",
        f"classify: {locked}: permission denied",
        f"classify: {empty}: empty review (no text, or only whitespace)",
        f"classify: {blank}: empty review (no text, or only whitespace)",
        f"classify: {latin1}: warning: not valid UTF-8; undecodable bytes replaced with U+FFFD",
    ]


def _make_unreadable(path: Path, monkeypatch) -> None:
    path.chmod(0)
    if os.access(path, os.R_OK):  # root reads anything: fail the open as it would for others
        real = reviews_module.open_binary

        def refuse(name):
            if Path(name) == path:
                raise PermissionError(13, "Permission denied", name)
            return real(name)

        monkeypatch.setattr(reviews_module, "open_binary", refuse)


@pytest.mark.parametrize(
    ("make", "message", "code"),
    [
        (lambda p: None, "no such file", 1),
        (lambda p: p.mkdir(), "is a directory", 1),
        (lambda p: p.write_bytes(b""), "empty review", 1),
        (lambda p: p.write_text(" \n\n\t"), "empty review", 1),
        (lambda p: p.write_bytes(b"great \xff\xfe film"), "warning: not valid UTF-8", 0),
    ],
    ids=["missing", "directory", "empty", "whitespace", "not-utf8"],
)
def test_each_bad_input_alone(trained, tmp_path, make, message, code):
    path = tmp_path / "input"
    make(path)
    result = run("predict", str(path))
    assert result.exit_code == code
    assert err_lines(result) == [f"classify: {path}: {message}" + _rest(message)]
    assert (result.stdout != "") == (code == 0)


def _rest(message: str) -> str:
    return {
        "empty review": " (no text, or only whitespace)",
        "warning: not valid UTF-8": "; undecodable bytes replaced with U+FFFD",
    }.get(message, "")


def test_per_line_bad_input(trained, tmp_path):
    path = tmp_path / "lines.txt"
    path.write_bytes(POSITIVE.encode() + b"\n\xff\xfe awful\n" + b"dull \xff\n")
    blank = tmp_path / "blank.txt"
    blank.write_text("\n \n")
    result = run("predict", "--per-line", "--format", "csv", str(path), str(blank))
    assert result.exit_code == 1
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [r["source"] for r in rows] == [f"{path}:1", f"{path}:2", f"{path}:3"]
    assert err_lines(result) == [
        f"classify: {path}:2: warning: not valid UTF-8; undecodable bytes replaced with U+FFFD "
        "(warned once per file)",
        f"classify: {blank}: empty (no non-blank line to classify)",
    ]


def test_usage_errors_exit_2(trained, reviews):
    for args in (
        ["predict"],
        ["predict", "--format", "xml", str(reviews["pos"])],
        ["predict", "--threshold", "1.5", str(reviews["pos"])],
        ["predict", "--batch-size", "0", str(reviews["pos"])],
        ["explain"],
        ["explain", "--format", "svg", str(reviews["pos"])],
    ):
        result = run(*args)
        assert result.exit_code == 2, args
        assert result.stdout == ""


# --- big files: the model's end kept, with a note --------------------------------------------


@pytest.mark.parametrize("per_line", [False, True], ids=["file", "per-line"])
def test_a_50_mb_review_keeps_its_tail_with_a_note(trained, big_file, per_line):
    args = ["predict", "--format", "csv", *(["--per-line"] if per_line else []), str(big_file)]
    result = run(*args)
    assert result.exit_code == 0, result.output
    (row,) = list(csv.DictReader(io.StringIO(result.stdout)))
    assert row["label"] == "positive"  # the model keeps the tail (data.truncate: tail)
    (note,) = err_lines(result)
    source = f"{big_file}:1" if per_line else str(big_file)
    assert note.startswith(f"classify: {source}: note: ")
    assert "classified from its last 65,536 bytes" in note
    if not per_line:
        assert f"{BIG:,} bytes" in note


def test_predict_texts_takes_a_plain_list(model):
    assert predict_texts(model, []) == []
    probabilities = predict_texts(model, [POSITIVE, NEGATIVE, POSITIVE], batch_size=2)
    assert probabilities[0] > 0.5 > probabilities[1]
    direct = model(tf.constant([POSITIVE]), training=False).numpy()[0, 1]
    assert probabilities[0] == pytest.approx(float(direct))


# --- fast prediction: batches of similar lengths, trimmed to their longest review ------------


def _texts_of_many_lengths(count: int, seed: int = 0) -> list[str]:
    """Reviews from no word at all to several times ``sequence_length`` words, shuffled."""
    rng = np.random.default_rng(seed)
    words = ["great", "awful", "film", "the", "plot", "wonderful", "dull", "zyzzyva"]
    texts = ["", "!!!", "great"]
    for _ in range(count - len(texts)):
        length = int(rng.choice([rng.integers(1, 6), rng.integers(6, 30), rng.integers(30, 80)]))
        texts.append(" ".join(rng.choice(words, size=length)))
    return [texts[i] for i in rng.permutation(len(texts))]


def _direct(model: keras.Model, texts: list[str]) -> np.ndarray:
    """P(positive) from the end-to-end model itself, every review padded to sequence_length."""
    return model(tf.constant(texts), training=False).numpy()[:, 1]


def _widths_seen(model: keras.Model, monkeypatch) -> list[tuple[int, int]]:
    """Record the (B, T) shape of every batch that the classifier step gets."""
    predictor = keras_predict.predictor_of(model)._predict
    shapes: list[tuple[int, int]] = []
    classify = predictor.classify

    def spy(token_ids):
        shapes.append(tuple(token_ids.shape))
        return classify(token_ids)

    monkeypatch.setattr(predictor, "classify", spy)
    return shapes


@pytest.mark.parametrize("variant", ["encoder", "block", "block_pos", "mha", "attention"])
def test_trimmed_batches_give_the_end_to_end_probabilities(variant, monkeypatch):
    model = untrained(variant, sequence_length=24)
    texts = _texts_of_many_lengths(90)
    shapes = _widths_seen(model, monkeypatch)
    probabilities = predict_texts(model, texts, batch_size=8)
    np.testing.assert_allclose(probabilities, _direct(model, texts), rtol=0, atol=1e-5)
    assert [batch for batch, _ in shapes] == [8] * 11 + [2]
    widths = [width for _, width in shapes]
    assert widths == sorted(widths) and widths[0] < 6 and widths[-1] == 24  # cut, then full


def test_order_is_kept_across_very_different_lengths(model, monkeypatch):
    short, long = "great", " ".join([NEGATIVE] * 10)  # 1 word; far over sequence_length
    texts = [
        (f"{POSITIVE} {i}" if i % 3 else long) if i % 2 else (short if i % 5 else NEGATIVE)
        for i in range(300)
    ]
    shapes = _widths_seen(model, monkeypatch)
    probabilities = predict_texts(model, texts, batch_size=16)
    expected = _direct(model, texts)
    np.testing.assert_allclose(probabilities, expected, rtol=0, atol=1e-5)
    assert np.ptp(expected) > 0.1  # a review in the wrong place would show
    assert {width for _, width in shapes} > {1, 24}  # short batches were trimmed


def test_a_classifier_saved_with_a_fixed_length_is_trimmed_too(tmp_path, monkeypatch):
    """Models saved before the classifiers took any length: same layers, any-length input."""
    words = ["great", "awful", "film", "the", "plot", "wonderful", "dull"]
    vectorizer = ReviewVectorizer(len(words) + 2, 24, "tail", words)
    cfg = ModelConfig(variant="encoder", embed_dim=8, num_heads=2, ff_dim=8, num_layers=1)
    fixed = keras.models.clone_model(
        build_classifier(cfg, len(words) + 2, 24),
        input_tensors=keras.Input(shape=(24,), dtype="int64", name="token_ids"),
    )
    build_end_to_end(vectorizer, fixed).save(tmp_path / "fixed.keras")
    model = load_keras_model(tmp_path / "fixed.keras")
    assert tuple(model.layers[-1].inputs[0].shape) == (None, 24)
    texts = _texts_of_many_lengths(40, seed=1)
    shapes = _widths_seen(model, monkeypatch)
    probabilities = predict_texts(model, texts, batch_size=8)
    np.testing.assert_allclose(probabilities, _direct(model, texts), rtol=0, atol=1e-5)
    assert min(width for _, width in shapes) < 24


def test_another_end_to_end_model_runs_whole():
    """Anything but ``classifier(vectorizer(texts))`` is run as it is, texts in."""
    inner = untrained("attention", sequence_length=24)
    texts = keras.Input(shape=(), dtype="string")
    sharper = keras.layers.Activation("softmax")(inner(texts) * 3.0)
    model = keras.Model(texts, sharper)
    assert isinstance(keras_predict.predictor_of(model)._predict, keras_predict._EndToEnd)
    reviews = _texts_of_many_lengths(20)
    probabilities = predict_texts(model, reviews, batch_size=6)
    np.testing.assert_allclose(probabilities, _direct(model, reviews), rtol=0, atol=1e-6)


def test_the_cache_does_not_keep_a_model_alive():
    model = untrained("attention")
    predict_texts(model, ["great film", "dull"])
    alive = weakref.ref(model)
    del model
    gc.collect()
    assert alive() is None


@pytest.mark.parametrize("end_to_end", [False, True])
def test_many_models_in_one_process_predict_without_tensorflows_retracing_warning(end_to_end):
    """A sweep worker trains point after point in one process, and each point's model is
    predicted with (its bundle's check, its calibration): each model's functions are traced
    once, so TensorFlow's "N out of the last M calls ... triggered tf.function retracing"
    warning, which counts the tracings of one Python function over all models, must not
    reach the user (a sweep of 8 points printed it four times)."""
    with tensorflow_log() as seen:
        for _ in range(7):
            model = untrained("attention")
            if end_to_end:  # anything but classifier(vectorizer(texts)) runs whole
                texts = keras.Input(shape=(), dtype="string")
                model = keras.Model(texts, model(texts))
            for batch_size in (7, 64):  # one call each
                predict_texts(model, ["great film", "dull plot", "the film"], batch_size)
    assert not [message for message in seen if "retracing" in message], seen


def test_token_counts_and_length_sorted_batches():
    ids = np.array([[5, 3, 0, 0], [0, 0, 0, 0], [2, 2, 2, 2], [7, 0, 0, 0], [4, 1, 9, 0]])
    lengths = batching.token_counts(ids)
    assert lengths.tolist() == [2, 0, 4, 1, 3]
    batches = list(batching.length_sorted_batches(lengths, 2))
    assert [(rows.tolist(), width) for rows, width in batches] == [
        ([1, 3], 1),  # no token at all: one column of padding
        ([0, 4], 3),
        ([2], 4),
    ]


def test_results_start_after_the_first_chunk(model):
    """Reviews are read a chunk at a time: the first results come before the rest is read."""
    read: list[int] = []

    def reviews():
        for number in range(1, 1001):
            read.append(number)
            yield Review(f"r:{number}", POSITIVE if number % 2 else NEGATIVE)

    predictions = predict_module.classify(model, reviews(), batch_size=64)
    first = next(predictions)
    assert first.source == "r:1" and len(read) == predict_module.FIRST_CHUNK
    rest = list(predictions)
    assert [p.source for p in [first, *rest]] == [f"r:{n}" for n in range(1, 1001)]
    assert [p.label for p in rest[:2]] == ["negative", "positive"]


def test_json_is_json_even_for_a_nan_probability():
    predictions = [
        predict_module.Prediction("a.txt", "negative", float("nan")),
        predict_module.Prediction("b.txt", "positive", 0.75),
    ]
    rows = json.loads("\n".join(predict_module.format_predictions(predictions, "json")))
    assert [row["positive_probability"] for row in rows] == [None, 0.75]


WEIGHTS = {"brilliant": 4.0, "awful": -5.0, "excellent": 2.5, "the": 0.1, "film": 0.05}


def linear_model(texts: list[str]) -> np.ndarray:
    """P(negative), P(positive) of a model whose log-odds are the sum of its words' weights."""
    log_odds = np.array([sum(WEIGHTS.get(w, 0.0) for w in text.lower().split()) for text in texts])
    positive = 1 / (1 + np.exp(-log_odds))
    return np.stack([1 - positive, positive], axis=1)


@pytest.mark.parametrize(
    "text, unknown",
    [
        ("Brilliant!", False),  # one known word that moves the odds by e^4
        ("Awful.", False),
        ("Excellent bluetooth headset.", False),  # one known word among unknown ones
        ("the", True),  # a known word of no weight
        ("the film the film", True),  # four known words weighing 0.3 nats together
        ("xqzv blorf", True),  # no known word
        ("the " * 8, False),  # eight known words: judged on them, whatever they weigh
    ],
)
def test_unknown_means_the_known_words_weigh_next_to_nothing(text, unknown):
    assert is_unknown(text, linear_model, WEIGHTS) == unknown


def test_a_misspelt_word_read_as_a_known_one_is_evidence():
    tokenizer = Tokenizer(["", "[UNK]", *WEIGHTS], 16, spelling=16)

    def reading(texts: list[str]) -> np.ndarray:  # the linear model on the words it reads
        ids = tokenizer.encode(texts)
        return linear_model([" ".join(tokenizer.vocabulary[i] for i in row if i) for row in ids])

    assert reading(["Brillaint!"])[0, 1] > 0.98
    assert is_unknown("Brillaint!", reading, WEIGHTS, spelling=16) is False
    assert is_unknown("Brillaint!", reading, WEIGHTS) is True  # no spelling: no known word


def is_unknown(text: str, predict, words, spelling: int = 0) -> bool:
    """The verdict of :func:`~classifier.serving.evidence.unknown` on ``text`` for a model that
    knows ``words`` (and corrects the ``spelling`` of inputs of fewer words) and gives
    ``predict(texts)`` probabilities."""
    from types import SimpleNamespace

    from classifier.data.tokenizer import Tokenizer
    from classifier.serving import evidence

    model = SimpleNamespace(  # a Predictor (classifier.serving.predict)
        labels=("negative", "positive"),
        sequence_length=16,
        truncate="tail",
        tokenizer=Tokenizer(["", "[UNK]", *words], 16, spelling=spelling),
        predict_probabilities=lambda texts, batch_size: predict(texts),
    )
    known, _ = predict_module.word_counts(model, [text])
    (verdict,) = evidence.unknown([text], predict([text]), known, predict, model.tokenizer)
    return bool(verdict)


#: Per word, its weight towards each of three classes (the log-probabilities up to a constant).
CLASS_WEIGHTS = {"brilliant": [0.0, 4.0, 1.0], "awful": [5.0, 0.0, 0.5], "the": [0.1, 0.0, 0.05]}


def three_class_model(texts: list[str]) -> np.ndarray:
    """Softmax of the sum of the words' class weights."""
    scores = np.array(
        [
            np.sum([CLASS_WEIGHTS.get(w, [0.0] * 3) for w in t.split()] or [[0.0] * 3], 0)
            for t in texts
        ]
    )
    exp = np.exp(scores - scores.max(axis=1, keepdims=True))
    return exp / exp.sum(axis=1, keepdims=True)


@pytest.mark.parametrize(
    "text, unknown", [("brilliant", False), ("awful", False), ("the", True), ("the the", True)]
)
def test_unknown_over_three_classes_weighs_the_margin_of_the_predicted_class(text, unknown):
    assert is_unknown(text, three_class_model, CLASS_WEIGHTS) == unknown


def test_a_words_weight_is_its_occlusion_of_the_margin():
    from classifier.serving import evidence

    words = [["brilliant", "the", "awful"], ["excellent"]]
    known = [[True, True, True], [True]]
    weights = evidence.total_weight(linear_model, words, known, np.array([1, 1]))
    assert weights == pytest.approx([4.0 + 0.1 + 5.0, 2.5])
    # More than two classes: the margin of a class, its log-probability minus the others' mean.
    probabilities = np.array([[0.7, 0.2, 0.1]])
    expected = np.log(0.7) - (np.log(0.2) + np.log(0.1)) / 2
    assert evidence.margin(probabilities, np.array([0])) == pytest.approx([expected])


@pytest.mark.parametrize(
    "row, labels, unknown, threshold, label",
    [
        ([0.3, 0.7], ("negative", "positive"), False, 0.5, "positive"),
        ([0.3, 0.7], ("negative", "positive"), False, 0.8, "negative"),
        ([0.3, 0.7], ("ham", "spam"), True, 0.5, "unknown"),
        ([0.2, 0.5, 0.3], ("bad", "fine", "good"), False, 0.5, "fine"),
    ],
)
def test_a_label_from_the_probabilities_and_the_unknown_verdict(
    row, labels, unknown, threshold, label
):
    assert predict_module.label_of(np.array(row), labels, unknown, threshold) == label


def test_every_format_says_unknown_and_the_share_of_known_words():
    predictions = [
        predict_module.Prediction("a", "unknown", 0.0255, 0.0),
        predict_module.Prediction("b", "positive", 0.999999, 1.0),
        predict_module.Prediction("c", "negative", 1.5e-05, 0.875),
    ]
    table = list(predict_module.format_predictions(predictions, "table"))
    assert table == [
        "label     P(positive)  known  source",
        "unknown        0.0255     0%  a",
        "positive      >0.9999   100%  b",
        "negative      <0.0001    88%  c",
    ]
    assert list(predict_module.format_predictions(predictions, "json")) == [
        "[",
        '  {"source": "a", "label": "unknown", "positive_probability": 0.025500, "known_share": 0.0000},',
        '  {"source": "b", "label": "positive", "positive_probability": 0.999999, "known_share": 1.0000},',
        '  {"source": "c", "label": "negative", "positive_probability": 0.000015, "known_share": 0.8750}',
        "]",
    ]
    assert list(predict_module.format_predictions(predictions, "csv")) == [
        "source,label,positive_probability,known_share",
        "a,unknown,0.025500,0.0000",
        "b,positive,0.999999,1.0000",
        "c,negative,0.000015,0.8750",
    ]


def test_words_the_model_does_not_know_are_counted_as_it_reads_them():
    from classifier.serving.litert_engine import load_bundle

    bundle = load_bundle(ROOT / "tests" / "serving" / "data" / "before_the_move" / "bundle")
    vocabulary = set(bundle.tokenizer.vocabulary)
    known_word = next(w for w in ("film", "movie", "the", "great") if w in vocabulary)
    texts = ["Meh.", f"{known_word} zzqx", f"{known_word} {known_word}"]
    known, words = predict_module.word_counts(bundle, texts)
    assert known.tolist() == [0, 1, 2] and words.tolist() == [1, 2, 2]

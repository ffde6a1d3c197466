"""``classify explain``: the attention figure of every variant, from the model's own graph."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from classifier.explain.explanation import explain_text, summary
from classifier.explain.measures import attention_received
from classifier.layers import attention_mask, padding_mask
from classifier.serving.model_source import find_bundle
from classifier.serving.predict import predict_texts
from tests.conftest import ROOT
from tests.model_helpers import NEGATIVE, PNG_MAGIC, POSITIVE, VARIANTS, err_lines, run, untrained


def test_explain_writes_a_png(trained, reviews, tmp_path):
    target = tmp_path / "figures" / "pos.png"
    result = run("explain", str(reviews["pos"]), "-o", str(target))
    assert result.exit_code == 0, result.output
    data = target.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 10_000
    assert result.stdout.startswith(f"{target}: positive (P(positive) 0.")
    assert "tokens, word occlusion, and attention of encoder layer 1 of 1" in result.stdout


def test_explain_writes_self_contained_html(trained, reviews, tmp_path):
    target = tmp_path / "neg.html"
    result = run("explain", str(reviews["neg"]), "-o", str(target))
    assert result.exit_code == 0, result.output
    page = target.read_text()
    assert "Predicted: negative" in page and ">terrible</span>" in page
    for external in ("<script", "http://", "https://", "<link", "src="):
        assert external not in page


def test_explain_stdin_to_the_default_file(trained, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run("explain", "-", "--format", "html", stdin=POSITIVE.encode())
    assert result.exit_code == 0, result.output
    assert (tmp_path / "stdin.occlusion.html").is_file()  # an attention model: its occlusion
    result = run("explain", "-", stdin=NEGATIVE.encode())
    assert (tmp_path / "stdin.occlusion.png").read_bytes()[:8] == PNG_MAGIC


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        (b" \n", "empty review (no text, or only whitespace)"),
        (b"!!! ... ???", "no words left after standardization (nothing to explain)"),
    ],
    ids=["missing", "empty", "punctuation"],
)
def test_explain_bad_input(trained, tmp_path, content, message):
    path = tmp_path / "review.txt"
    if content is not None:
        path.write_bytes(content)
    result = run("explain", str(path), "-o", str(tmp_path / "out.png"))
    assert result.exit_code == 1
    assert err_lines(result) == [f"classify: {path}: {message}"]
    assert not (tmp_path / "out.png").exists()


def _reference_weights(model, text: str) -> np.ndarray:
    """The last attention layer's weights (h, T, T) computed by hand, layer by layer, for one
    review: an independent reference for the graph that ``explain`` builds."""
    vectorizer, classifier = model.layers[1], model.layers[2]
    ids = vectorizer(tf.constant([text]))
    mask = padding_mask(ids)
    x = classifier.get_layer("embedding")(ids)
    names = [layer.name for layer in classifier.layers]
    if "encoder" in names:
        _, weights = classifier.get_layer("encoder")(
            x, padding_mask=mask, return_attention_scores=True
        )
        weights = weights[-1]
    elif "transformer_block" in names:
        _, weights = classifier.get_layer("transformer_block")(
            x, padding_mask=mask, return_attention_scores=True
        )
    elif "mha_0" in names:
        pairs = attention_mask(mask, mask)
        for name in ("mha_0", "mha_1"):
            x, weights = classifier.get_layer(name)(
                x, x, attention_mask=pairs, return_attention_scores=True
            )
    else:
        for name in ("attention_0", "attention_1"):
            x, weights = classifier.get_layer(name)(
                [x, x], mask=[mask, mask], return_attention_scores=True
            )
        weights = keras.ops.expand_dims(weights, 1)
    count = int(np.count_nonzero(keras.ops.convert_to_numpy(ids)))
    return keras.ops.convert_to_numpy(weights)[0, :, :count, :count]


@pytest.mark.parametrize("variant", VARIANTS)
def test_explained_attention_is_the_models_own(variant):
    model = untrained(variant)
    words = "Great film, the plot was zyzzyva but dull and awful. Wonderful the film great!"
    explanation = explain_text(model, words, source="x")
    # The explain graph is the model's: the same probability, and the weights it attends with.
    assert explanation.probability == pytest.approx(predict_texts(model, [words])[0], abs=1e-5)
    reference = _reference_weights(model, words)
    np.testing.assert_allclose(
        explanation.weights, attention_received(reference, np.ones(12, bool)), atol=1e-6
    )
    expected = "great film the plot was zyzzyva but dull and awful wonderful the film great"
    assert explanation.tokens == expected.split()[-12:]  # the tail, as the vectorizer keeps it
    assert explanation.dropped_words == 2
    assert explanation.in_vocabulary[explanation.tokens.index("zyzzyva")] is False
    assert explanation.weights.shape == explanation.attention.shape == (12,)
    assert explanation.weights.sum() == pytest.approx(1.0, abs=1e-5)
    assert (explanation.weights >= 0).all()
    assert explanation.heads == (1 if variant == "attention" else 2)
    short = explain_text(model, "great film")  # padded: padding gets no attention
    assert short.tokens == ["great", "film"] and short.weights.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(
        short.weights,
        attention_received(_reference_weights(model, "great film"), np.ones(2, bool)),
        atol=1e-6,
    )


def test_attention_received_by_hand():
    weights = np.array(
        [
            [[0.5, 0.5, 0.0], [1.0, 0.0, 0.0], [0.3, 0.3, 0.4]],  # head 0; row 2 is padding
            [[0.0, 1.0, 0.0], [0.5, 0.5, 0.0], [0.3, 0.3, 0.4]],  # head 1
        ]
    )
    received = attention_received(weights, np.array([True, True, False]))
    # Mean over heads: [[.25, .75], [.75, .25]]; mean over the two real queries: [.5, .5].
    np.testing.assert_allclose(received, [0.5, 0.5, 0.0])


def test_the_word_whose_removal_flips_the_label_weighs_most_towards_it(model):
    # b2bae7f shaded an attention model's words by attention alone: no direction
    candidates = [
        "the movie was great but boring",
        "a dull plot and a great actor",
        "the film was wonderful and awful",
        "it was boring great and moving",
        "loved the scene hated the story",
    ]
    found = 0
    for text in candidates:
        explanation = explain_text(model, text)
        words = text.split()
        assert explanation.tokens == words and explanation.signed
        towards = 1.0 if explanation.probability >= 0.5 else -1.0
        without = [" ".join(words[:i] + words[i + 1 :]) for i in range(len(words))]
        flips = [(p >= 0.5) != (towards > 0) for p in predict_texts(model, without)]
        if any(flips):
            found += 1
            assert flips[int(np.argmax(towards * explanation.attention))], text
        assert explanation.weights is not None and explanation.weights.sum() == pytest.approx(1)
    assert found, "no candidate review flips when one word is removed"


def test_explain_runs_without_tensorflow_and_draws_what_keras_draws(trained, model, tmp_path):
    """The registered model's bundle explains a review in a process that never imports
    TensorFlow or Keras (its import would also mute stderr), with the Keras figures."""
    review = tmp_path / "review.txt"
    review.write_text(NEGATIVE + "\n")
    script = (
        "import sys\n"
        "from classifier.cli.main import cli\n"
        "try:\n"
        f"    cli.main(['explain', {str(review)!r}, '-o', {str(tmp_path / 'out.html')!r}],"
        " standalone_mode=False)\n"
        "finally:\n"
        "    print(sorted({'tensorflow', 'keras'} & set(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    line, imported = done.stdout.strip().splitlines()
    assert imported == "[]"
    expected = explain_text(model, NEGATIVE)
    assert line == summary(tmp_path / "out.html", expected)  # the same label and P(positive)
    page = (tmp_path / "out.html").read_text()
    shaded = [float(value) for value in re.findall(r'class="t" [^>]*title="([-0-9.]+)"', page)]
    assert len(shaded) == 2 * len(expected.tokens)  # each word's push, then its attention
    pushes = np.concatenate([expected.attention, expected.weights])
    np.testing.assert_allclose(shaded, pushes, rtol=0, atol=0.6e-4)  # 4 decimals


def test_a_bundle_written_before_explain_parts(trained, reviews, tmp_path):
    """A run logged before bundles held explain parts is explained by its Keras model, as
    before; such a bundle folder given by path (no Keras model beside it) is one line."""
    folder = find_bundle(None)
    manifest = folder / "bundle.json"
    saved = manifest.read_text()
    target = tmp_path / "out.png"
    with_parts = run("explain", str(reviews["pos"]), "-o", str(target))
    assert with_parts.exit_code == 0, with_parts.output

    def rewrite(text: str) -> None:  # whole at once: the other test workers read this bundle
        (tmp_path / "bundle.json").write_text(text)
        os.replace(tmp_path / "bundle.json", manifest)

    try:
        older = json.loads(saved)
        del older["explain"]
        rewrite(json.dumps(older))
        from_keras = run("explain", str(reviews["pos"]), "-o", str(target))
        assert from_keras.exit_code == 0, from_keras.output
        assert from_keras.stdout == with_parts.stdout
        by_path = run("explain", str(reviews["pos"]), "--model", str(folder))
        assert by_path.exit_code == 2
        assert err_lines(by_path) == [
            f"classify: error: model bundle {folder}: written before bundles held what explain "
            "needs "
            "(explain its run's model.keras, or its models:/ URI, instead)"
        ]
    finally:
        rewrite(saved)

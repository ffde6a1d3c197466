"""The explain views (:mod:`classifier.explain.views`): the HTML page agrees with the PNG."""

from __future__ import annotations

import re

import numpy as np

from classifier import plots
from classifier.explain.views import Explanation, caption, weights_caption, write_html


def made(**changes) -> Explanation:
    """An explanation of ``r.txt`` (``great film``, positive at 0.9), with ``changes``."""
    tokens = changes.get("tokens", ["great", "film"])
    fields = {
        "source": "r.txt",
        "tokens": tokens,
        "in_vocabulary": [True] * len(tokens),
        "attention": np.full(len(tokens), 1 / len(tokens)),
        "probability": 0.9,
        "label": "positive",
        "layer": "the layer",
        "heads": 0,
        "dropped_words": 0,
        "truncate": "tail",
        "signed": False,
    }
    return Explanation(**{**fields, **changes})


def test_the_html_bars_have_the_png_colours(tmp_path):
    # b2bae7f: the HTML bars were blue where the PNG's were orange (attention)
    shares = np.array([0.5, 0.3, 0.2])
    explanation = made(
        tokens=["great", "dull", "film"], attention=shares, layer="attention_1", heads=1
    )
    page = write_html(tmp_path / "r.html", explanation).read_text()
    bars = re.findall(r'class="bar" style="width:\d+px;background:(rgb\(\d+,\d+,\d+\))"', page)
    expected = [
        "rgb({},{},{})".format(*(int(round(255 * c)) for c in rgba[:3]))
        for rgba in plots.token_colours(sorted(shares, reverse=True), 0.5)
    ]
    assert bars == expected


def test_a_fused_models_captions_say_what_each_branch_shows(tmp_path):
    def fused(weights):
        return made(
            tokens=["great", "film", "dull", "plot", "end"],
            attention=np.array([0.4, 0.1, -0.3, 0.0, -0.1]),
            probability=0.7,
            layer="the attention branch's layer 2 of 2",
            heads=1,
            signed=True,
            weights=weights,
            branch_log_odds=0.256,
        )

    # The attention branch read the first 3 tokens: the others received no attention.
    short = fused(np.array([0.5, 0.2, 0.3, 0.0, 0.0]))
    assert "in the n-gram branch" in caption(short)
    assert "The attention branch adds +0.26 to the log-odds." in caption(short)
    assert weights_caption(short).endswith("The attention branch reads the first 3 tokens only.")
    whole = fused(np.array([0.5, 0.2, 0.1, 0.1, 0.1]))
    assert "reads the first" not in weights_caption(whole)
    page = write_html(tmp_path / "r.html", short).read_text()
    assert "The attention branch adds +0.26 to the log-odds." in page
    assert "reads the first 3 tokens only." in page


def test_captions_and_file_names_say_what_each_kind_of_model_shows(tmp_path):
    def linear(**changes):
        return made(
            **{
                "attention": np.array([0.8, -0.1]),
                "layer": "the NB-weighted bag of word n-grams",
                "signed": True,
                **changes,
            }
        )

    nbow = linear(ngram_order=3, scaled="NB-scaled")
    assert "(weight x NB-scaled value, with half of each word pair and a third of each word " in (
        caption(nbow)
    )
    assert "triple it is in): blue towards positive, red towards negative." in caption(nbow)
    assert "(weight x TF-IDF value, with half of each word pair it is in)" in caption(linear())
    assert "(weight x TF-IDF value): " in caption(linear(ngram_order=1))
    assert nbow.kind == "contributions"
    occlusion = linear(weights=np.array([0.6, 0.4]), heads=2)
    assert occlusion.kind == "occlusion" and "(occlusion)" in caption(occlusion)
    assert linear(signed=False, weights=None).kind == "attention"
    # More than two classes: the margin of the class explained, and no "negative" side.
    okay = linear(label="good", target="okay", against="")
    assert "contribution to the margin of okay in " in caption(okay)
    assert caption(okay).endswith(
        "blue towards okay, red away from it. Italic: not in the vocabulary."
    )
    page = write_html(tmp_path / "okay.html", okay).read_text()
    assert "<p>P(okay) = 0.900</p>" in page and "away from okay <span" in page

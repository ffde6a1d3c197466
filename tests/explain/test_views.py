"""The explain views (:mod:`classifier.explain.views`): the HTML page agrees with the PNG."""

from __future__ import annotations

import re

import numpy as np

from classifier import plots
from classifier.explain.views import Explanation, write_html


def test_the_html_bars_have_the_png_colours(tmp_path):
    # b2bae7f: the HTML bars were blue where the PNG's were orange (attention)
    shares = np.array([0.5, 0.3, 0.2])
    explanation = Explanation(
        source="r.txt",
        tokens=["great", "dull", "film"],
        in_vocabulary=[True, True, True],
        attention=shares,
        probability=0.9,
        label="positive",
        layer="attention_1",
        heads=1,
        dropped_words=0,
        truncate="tail",
        signed=False,
    )
    page = write_html(tmp_path / "r.html", explanation).read_text()
    bars = re.findall(r'class="bar" style="width:\d+px;background:(rgb\(\d+,\d+,\d+\))"', page)
    expected = [
        "rgb({},{},{})".format(*(int(round(255 * c)) for c in rgba[:3]))
        for rgba in plots.token_colours(sorted(shares, reverse=True), 0.5)
    ]
    assert bars == expected

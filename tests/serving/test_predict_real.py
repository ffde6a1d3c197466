"""Real data: the smoke model classifies 500 IMDB test reviews through ``classify predict``."""

from __future__ import annotations

import csv
import io

import pytest
from click.testing import CliRunner

from classifier.cli.main import cli
from classifier.config.schema import load_config
from classifier.data.pipeline import load_raw_splits
from tests.conftest import ROOT

pytestmark = pytest.mark.large

REVIEWS = 500
SMOKE_MODEL = "imdb-sentiment-smoke"


@pytest.fixture(scope="module")
def test_reviews(imdb_data_dir, tmp_path_factory):
    """The first 500 test reviews, one per line (newlines inside a review become spaces)."""
    cfg = load_config(
        ROOT / "configs" / "smoke.yaml",
        [f"data.data_dir={imdb_data_dir}", f"data.test_size={REVIEWS}"],
    )
    texts, labels = [], []
    for text, label in load_raw_splits(cfg.data).test:
        review = text.numpy().decode("utf-8")
        texts.append(" ".join(review.replace("\r", " ").replace("\n", " ").split()))
        labels.append(int(label))
    path = tmp_path_factory.mktemp("imdb-test") / "reviews.txt"
    path.write_text("\n".join(texts) + "\n", encoding="utf-8")
    return path, texts, labels


def test_cli_accuracy_on_500_test_reviews(smoke_run, test_reviews, monkeypatch):
    uri, _ = smoke_run
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    path, texts, labels = test_reviews
    assert len(labels) == REVIEWS and 0.3 < sum(labels) / REVIEWS < 0.7
    args = ["predict", "--per-line", "--format", "csv", "--batch-size", "128"]
    args += ["--model", f"models:/{SMOKE_MODEL}@latest", str(path)]
    result = CliRunner().invoke(cli, args, prog_name="classify")
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [row["source"] for row in rows] == [f"{path}:{i}" for i in range(1, REVIEWS + 1)]
    predicted = [int(row["label"] == "positive") for row in rows]
    accuracy = sum(p == y for p, y in zip(predicted, labels, strict=True)) / REVIEWS
    assert accuracy > 0.70, accuracy


def test_explain_a_real_review(smoke_run, test_reviews, monkeypatch, tmp_path):
    uri, _ = smoke_run
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    _, texts, _ = test_reviews
    longest = max(texts, key=len)
    review = tmp_path / "review.txt"
    review.write_text(longest, encoding="utf-8")
    target = tmp_path / "review.png"
    args = ["explain", "--model", f"models:/{SMOKE_MODEL}@newest", str(review), "-o", str(target)]
    result = CliRunner().invoke(cli, args, prog_name="classify")
    assert result.exit_code == 0, result.output
    assert "128 tokens" in result.stdout  # the smoke model's sequence_length
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

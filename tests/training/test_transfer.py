"""Transfer (``model.init_from`` naming a trained classifier): what fits is copied, the head is
new, the vocabulary is the trained model's, and sizes that cannot fit are one line."""

from __future__ import annotations

import numpy as np
import pytest
from mlflow.tracking import MlflowClient

from classifier.config.schema import load_config
from classifier.errors import ConfigError
from classifier.training.build import new_model
from classifier.training.train import train
from classifier.training.transfer import TrainedClassifier, starting_point
from tests.labelled_helpers import labelled_overrides, labelled_rows, write_csv

SOURCE = "transfer-source"


@pytest.fixture(scope="module")
def source(store, tmp_path_factory):
    """An attention model trained on two classes of the fixture texts, registered."""
    folder = tmp_path_factory.mktemp("source")
    rows = [row for row in labelled_rows(300, seed=5) if row[1] != "okay"]
    path = write_csv(folder / "two.csv", rows)
    cfg = load_config(
        None,
        [
            *labelled_overrides(),
            f"data.source={path}",
            "model.variant=attention",
            "train.epochs=3",
            "train.refit=false",
            f"train.registered_model={SOURCE}",
            "experiment=transfer",
        ],
    )
    return train(cfg, echo=lambda line: None), folder


def target_config(folder, *overrides: str):
    path = write_csv(folder / "three.csv", labelled_rows(150, seed=6))
    return load_config(
        None,
        [
            *labelled_overrides(),
            f"data.source={path}",
            "model.variant=attention",
            "train.epochs=2",
            "train.refit=false",
            f"model.init_from=models:/{SOURCE}@newest",
            "train.registered_model=transfer-target",
            "experiment=transfer",
            *overrides,
        ],
    )


def test_the_embedding_is_copied_and_the_head_is_new(source, tmp_path):
    result, _ = source
    cfg = target_config(tmp_path)
    start = starting_point(cfg)
    assert isinstance(start, TrainedClassifier)
    assert start.run_id == result.run_id
    batches = [(np.array([[2, 3, 0]]), np.array([0]))]
    model = new_model(cfg, batches, start, num_classes=3)
    assert start.copied == ["embedding"]
    trained = start.classifier.get_layer("embedding").get_weights()
    for ours, theirs in zip(model.get_layer("embedding").get_weights(), trained, strict=True):
        np.testing.assert_array_equal(ours, theirs)
    assert model.get_layer("head").get_weights()[0].shape == (8, 3)  # new: three classes
    vocabulary = start.vectorizer(cfg.data).get_vocabulary()
    assert vocabulary == start.vocabulary  # the trained model's words, ids unchanged


def test_a_run_records_where_it_started(source, tmp_path):
    result, _ = source
    target = train(target_config(tmp_path), echo=lambda line: None)
    run = MlflowClient().get_run(target.run_id)
    assert run.data.tags["init_from_run"] == result.run_id
    assert run.data.params["model.init_from_layers"] == "embedding"
    assert run.data.params["model.init_from"] == f"models:/{SOURCE}@newest"


@pytest.mark.parametrize(
    "overrides, message",
    [
        (
            ["model.embed_dim=16"],
            f"model.init_from=models:/{SOURCE}@newest: none of its layers fits this model's: "
            "embedding [(64, 16)] against [(64, 8)]; use the model.* sizes it was trained with",
        ),
        (
            ["data.vocab_size=80"],
            f"data.vocab_size=80 but the model from models:/{SOURCE}@newest has 64 (its "
            "vocabulary and embedding are reused)",
        ),
        (
            ["data.sentences=true"],
            f"data.sentences=true but the model from models:/{SOURCE}@newest was trained with "
            "false (its vocabulary is reused)",
        ),
    ],
)
def test_sizes_that_cannot_fit_are_one_line(source, tmp_path, overrides, message):
    cfg = target_config(tmp_path, *overrides)
    with pytest.raises(ConfigError) as caught:
        start = starting_point(cfg)
        new_model(cfg, [(np.array([[2, 3]]), np.array([0]))], start, num_classes=3)
    assert str(caught.value) == message

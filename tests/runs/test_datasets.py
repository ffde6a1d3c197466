"""A run's data as MLflow datasets: the digest of a file is that of its bytes, a folder's
changes with any of its files, and a labelled file's splits share one dataset."""

from __future__ import annotations

import hashlib

from classifier.config.schema import DataConfig
from classifier.runs.datasets import DIGEST_LENGTH, file_digest, run_datasets


def test_a_file_digest_is_its_sha256(tmp_path):
    path = tmp_path / "reviews.csv"
    path.write_bytes(b"text,label\na fine film,pos\n")
    assert file_digest(path) == hashlib.sha256(path.read_bytes()).hexdigest()[:DIGEST_LENGTH]


def test_a_folder_digest_follows_its_files(tmp_path):
    (tmp_path / "pos").mkdir()
    (tmp_path / "neg").mkdir()
    (tmp_path / "pos" / "1.txt").write_text("great")
    (tmp_path / "neg" / "1.txt").write_text("dull")
    before = file_digest(tmp_path)
    assert len(before) == DIGEST_LENGTH
    (tmp_path / "neg" / "1.txt").write_text("dull!")
    changed = file_digest(tmp_path)
    (tmp_path / "neg" / "1.txt").rename(tmp_path / "neg" / "2.txt")
    assert len({before, changed, file_digest(tmp_path)}) == 3


def test_the_splits_of_one_file_are_one_dataset(tmp_path):
    train, test = tmp_path / "train.csv", tmp_path / "test.csv"
    train.write_text("text,label\na,x\n")
    test.write_text("text,label\nb,y\n")
    datasets = run_datasets(DataConfig(source=str(train), test=str(test)))
    assert datasets["train"] is datasets["validation"]
    assert (datasets["train"].name, datasets["test"].name) == ("train", "test")
    assert datasets["test"].digest == file_digest(test)

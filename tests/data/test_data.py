"""The data pipeline on the tiny fixture data set that conftest writes in TFDS format."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from classifier.config.schema import load_config
from classifier.data import batching
from classifier.data import pipeline as data
from classifier.data.batching import length_buckets
from classifier.data.imdb import data_source, split_specs
from classifier.data.pipeline import (
    ReviewVectorizer,
    build_vectorizer,
    load_last_unlabelled,
    load_raw_splits,
    load_unsupervised,
    make_datasets,
    standardize_review,
)
from classifier.errors import ConfigError, DataNotFoundError
from tests.conftest import VALIDATION_ONLY_WORD, fixture_data_overrides
from tests.labelled_helpers import labelled_rows, write_csv


@pytest.fixture
def cfg(fixture_overrides):
    return load_config(None, fixture_overrides).data


def test_split_specs_carve_validation_from_train():
    specs = split_specs(load_config(None).data)
    assert specs == {"train": "train[:15000]", "validation": "train[15000:25000]", "test": "test"}
    small = split_specs(
        load_config(None, ["data.train_size=10", "data.val_size=5", "data.test_size=7"]).data
    )
    assert small == {"train": "train[:10]", "validation": "train[10:15]", "test": "test[:7]"}


def test_loads_the_configured_sizes(cfg):
    raw = load_raw_splits(cfg)
    assert [len(list(raw.train)), len(list(raw.validation)), len(list(raw.test))] == [120, 40, 80]
    text, label = next(iter(raw.train))
    assert text.dtype == tf.string and int(label) in (0, 1)
    assert len(list(load_unsupervised(cfg))) == 10


def test_the_last_unlabelled_reviews(cfg, monkeypatch):
    every = [text.numpy() for text in load_unsupervised(cfg)]
    last, count = load_last_unlabelled(cfg, 4)
    assert count == 4 and [text.numpy() for text, _ in last] == every[-4:]
    assert {int(label) for _, label in last} == {-1}
    assert load_last_unlabelled(cfg, 5000)[1] == 10  # all there are
    monkeypatch.setattr(data, "split_sizes", lambda _: {"unsupervised": 0})
    with pytest.raises(DataNotFoundError, match="holds no review"):
        load_last_unlabelled(cfg, 5000)


def test_standardization_lowercases_strips_breaks_and_punctuation():
    out = standardize_review(tf.constant(["Don't MISS it!<br />Great.<br/>Really,good"]))
    assert out.numpy()[0].decode().split() == ["dont", "miss", "it", "great", "really", "good"]


@pytest.mark.parametrize(
    ("side", "expected"), [("head", ["a", "b", "c"]), ("tail", ["d", "e", "f"])]
)
def test_truncation_keeps_the_configured_end(side, expected):
    vocabulary = ["a", "b", "c", "d", "e", "f"]
    vectorizer = ReviewVectorizer(10, 3, side, vocabulary=vocabulary)
    ids = vectorizer(tf.constant(["A b, c; d e f.", "e", ""])).numpy()
    tokens = vectorizer.get_vocabulary()
    assert [tokens[i] for i in ids[0]] == expected
    assert ids[1].tolist() == [tokens.index("e"), 0, 0]  # short reviews: padded at the end
    assert ids[2].tolist() == [0, 0, 0]


def test_vocabulary_comes_from_the_training_portion_only(cfg):
    raw = load_raw_splits(cfg)
    vocabulary = build_vectorizer(cfg, raw.train).get_vocabulary()
    assert vocabulary[:2] == ["", "[UNK]"]
    assert "great" in vocabulary and "awful" in vocabulary
    # The fixture puts this word in every validation review and in no training review.
    assert VALIDATION_ONLY_WORD not in vocabulary
    validation_text = " ".join(t.numpy().decode() for t, _ in raw.validation)
    assert VALIDATION_ONLY_WORD in validation_text


def test_pipelines_batch_pad_and_shuffle_deterministically(cfg):
    cfg = dataclasses.replace(cfg, bucket_by_length=False)
    raw = load_raw_splits(cfg)
    vectorizer = build_vectorizer(cfg, raw.train)

    def first_labels(seed):
        data = make_datasets(cfg, raw, vectorizer, seed=seed)
        return [y.numpy().tolist() for _, y in data.train]

    data = make_datasets(cfg, raw, vectorizer, seed=1)
    epoch = list(data.train)  # seed 1's first epoch
    ids, labels = epoch[0]
    assert ids.shape == (16, 24) and ids.dtype == tf.int64 and labels.shape == (16,)
    assert sum(x.shape[0] for x, _ in data.validation) == 40
    seeded = [y.numpy().tolist() for _, y in epoch]
    assert first_labels(1) == seeded  # built afresh, the same batches
    assert first_labels(2) != seeded
    # Validation and test keep their order.
    ordered = [int(y) for _, y in raw.validation]
    assert np.concatenate([y.numpy() for _, y in data.validation]).tolist() == ordered


def test_unbucketed_batches_are_the_padded_ids_in_the_seeded_order(cfg):
    # The cache holds ids without their padding; the batches are padded back to T, exactly as
    # vectorizing, shuffling and batching full-length ids would give them.
    cfg = dataclasses.replace(cfg, bucket_by_length=False)
    raw = load_raw_splits(cfg)
    vectorizer = build_vectorizer(cfg, raw.train)
    reference = (
        raw.train.batch(1024)
        .map(lambda text, label: (vectorizer(text), label))
        .unbatch()
        .shuffle(25_000, seed=3, reshuffle_each_iteration=True)
        .batch(cfg.batch_size)
    )
    ours = make_datasets(cfg, raw, vectorizer, seed=3).train
    for epoch in range(2):  # the second epoch reads the cache, in a new order
        pairs = list(zip(ours, reference, strict=True))
        assert len(pairs) == 8, epoch
        for (ids, labels), (want_ids, want_labels) in pairs:
            assert ids.shape[1] == cfg.sequence_length
            np.testing.assert_array_equal(ids.numpy(), want_ids.numpy())
            np.testing.assert_array_equal(labels.numpy(), want_labels.numpy())


def test_a_labelled_files_ids_are_cached_on_disk_imdbs_in_memory(cfg, tmp_path):
    write_csv(tmp_path / "texts.csv", labelled_rows(60))
    labelled = load_config(None, [f"data.source={tmp_path / 'texts.csv'}"]).data
    raw = load_raw_splits(labelled)
    vectorizer = build_vectorizer(labelled, raw.train)
    before = set(batching._cache_folder().iterdir())
    on_disk = make_datasets(labelled, raw, vectorizer, seed=1)
    written = {path.name.split("-")[0] for path in set(batching._cache_folder().iterdir()) - before}
    assert written == {"train", "validation", "test"}  # the buckets' counting pass filled them
    in_memory = batching.vectorize(raw.train, vectorizer, labelled.batch_size, 1, True)
    for (ids, labels), (want_ids, want_labels) in zip(on_disk.train, in_memory, strict=True):
        np.testing.assert_array_equal(ids.numpy(), want_ids.numpy())
        np.testing.assert_array_equal(labels.numpy(), want_labels.numpy())
    imdb_raw = load_raw_splits(cfg)
    before = set(batching._cache_folder().iterdir())
    make_datasets(cfg, imdb_raw, build_vectorizer(cfg, imdb_raw.train), seed=1)
    assert set(batching._cache_folder().iterdir()) == before


def test_the_id_caches_of_a_killed_process_are_removed_by_the_next(tmp_path):
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], **TEXT)
    killed = tmp_path / f"{batching.CACHE_PREFIX}{ended.stdout.strip()}-k2j4_x"  # its pid ended
    killed.mkdir()
    (killed / "train-1.data").write_bytes(b"ids")
    live = tmp_path / f"{batching.CACHE_PREFIX}{os.getpid()}-a8b7_c"
    live.mkdir()
    older = tmp_path / f"{batching.CACHE_PREFIX}q1w2e3"  # named before process ids: unknown
    older.mkdir()
    assert batching.remove_orphans(tmp_path) == [killed]
    assert sorted(tmp_path.iterdir()) == sorted([live, older])
    mine = Path(batching.cache_file("train")).parent
    assert mine.name.startswith(f"{batching.CACHE_PREFIX}{os.getpid()}-")


TEXT = {"capture_output": True, "text": True, "check": True}


def test_length_buckets_keep_every_review_and_pad_to_the_longest_in_the_batch(cfg):
    raw = load_raw_splits(cfg)
    vectorizer = build_vectorizer(cfg, raw.train)
    plain = make_datasets(dataclasses.replace(cfg, bucket_by_length=False), raw, vectorizer, 1)
    bucketed = make_datasets(cfg, raw, vectorizer, seed=1)

    def reviews(batches):  # every review as (ids without padding, label), sorted
        return sorted(
            (tuple(row[row != 0].tolist()), int(label))
            for ids, labels in batches
            for row, label in zip(ids.numpy(), labels.numpy(), strict=True)
        )

    epoch = list(bucketed.train)  # the first epoch of seed 1's training batches
    assert reviews(epoch) == reviews(plain.train)
    for split in ("validation", "test"):
        assert reviews(getattr(bucketed, split)) == reviews(getattr(plain, split))

    bounds = length_buckets(cfg.sequence_length)
    widths = set()
    for ids, _ in epoch:
        lengths = np.count_nonzero(ids.numpy(), axis=1)
        assert 1 <= ids.shape[0] <= cfg.batch_size
        assert ids.shape[1] == lengths.max()  # padded to its longest review, not to T
        assert len(set(np.searchsorted(bounds, lengths, side="right"))) == 1  # one bucket
        widths.add(ids.shape[1])
    assert len(epoch) == int(bucketed.train.cardinality())  # the epoch length Keras is told
    assert len(widths) > 1 and max(widths) <= cfg.sequence_length

    def order(data):
        return [y.numpy().tolist() for _, y in data]

    def first_epoch(seed):
        return order(make_datasets(cfg, raw, vectorizer, seed=seed).train)

    assert first_epoch(1) == order(epoch)  # seeded: the same batches, built afresh
    assert order(epoch) != first_epoch(2)
    assert order(bucketed.validation) == order(bucketed.validation)  # evaluation passes agree


def test_length_bucket_bounds():
    assert length_buckets(256) == [33, 65, 97, 129, 161, 193, 225]
    assert length_buckets(4) == [2, 3, 4]


def test_vectorizer_saves_and_loads_in_keras_format(cfg, tmp_path):
    raw = load_raw_splits(cfg)
    vectorizer = build_vectorizer(cfg, raw.train)
    inputs = keras.Input(shape=(), dtype="string")
    model = keras.Model(inputs, vectorizer(inputs))
    model.save(tmp_path / "v.keras")
    loaded = keras.models.load_model(tmp_path / "v.keras")  # safe_mode=True
    texts = tf.constant(["A great film <br /> and a moving story", "awful"])
    np.testing.assert_array_equal(model(texts).numpy(), loaded(texts).numpy())


def test_missing_data_raises_one_line_naming_the_fix(tmp_path, cfg):
    cfg.data_dir = str(tmp_path / "empty")
    cfg.download = False
    with pytest.raises(DataNotFoundError) as raised:
        load_raw_splits(cfg)
    message = str(raised.value)
    assert "\n" not in message
    assert "TFDS_DATA_DIR" in message and "--data-dir" in message and str(tmp_path) in message


def test_vocabulary_with_line_separators_survives_keras_saving(tmp_path):
    # IMDB holds cp1252 leftovers (\x85, \x96); Keras reads a saved vocabulary with
    # str.splitlines(), which also breaks at \x85, \x1c-\x1e and U+2028/U+2029.
    texts = ["good\x85bad film", "nice\u2028plot\x96twist", "end\x1cof\x0bline"]
    vectorizer = ReviewVectorizer(50, 6, "tail")
    vectorizer.adapt(tf.data.Dataset.from_tensor_slices(texts).batch(3))
    assert all(len(token.splitlines()) <= 1 for token in vectorizer.get_vocabulary())
    inputs = keras.Input(shape=(), dtype="string")
    model = keras.Model(inputs, vectorizer(inputs))
    model.save(tmp_path / "v.keras")
    loaded = keras.models.load_model(tmp_path / "v.keras")
    np.testing.assert_array_equal(
        model(tf.constant(texts)).numpy(), loaded(tf.constant(texts)).numpy()
    )


@pytest.mark.parametrize(
    ("override", "named"),
    [
        ("data.test_size=81", "data.test_size=81 exceeds the 80 reviews of the test split"),
        ("data.val_size=41", "data.val_size=41 exceeds the 160 reviews of the train split"),
    ],
)
def test_sizes_beyond_the_prepared_copy_are_refused(fixture_data_dir, override, named):
    # Both pass the config's checks (25,000 reviews a split) but the copy holds fewer. TFDS
    # refuses such a slice with a ValueError that used to be reported as missing data.
    cfg = load_config(None, [*fixture_data_overrides(fixture_data_dir), override]).data
    with pytest.raises(ConfigError) as raised:
        load_raw_splits(cfg)
    assert named in str(raised.value) and str(fixture_data_dir) in str(raised.value)


def test_data_source_names_the_fixture_data(cfg, fixture_data_dir):
    assert data_source(cfg) == {
        "data.source_dir": str(fixture_data_dir),
        "data.tfds_dataset": "imdb_reviews/plain_text/1.0.0",
        "data.tfds_package": tfds.__version__,
    }
    assert (fixture_data_dir / "imdb_reviews" / "plain_text" / "1.0.0").is_dir()


def test_data_source_follows_tfds_data_dir_as_an_absolute_path(
    fixture_data_dir, monkeypatch, tmp_path
):
    monkeypatch.chdir(fixture_data_dir.parent)
    monkeypatch.setenv("TFDS_DATA_DIR", fixture_data_dir.name)  # relative: made absolute
    cfg = load_config(None, ["data.data_dir=null", "data.train_size=120", "data.val_size=40"])
    source = data_source(cfg.data)
    assert source["data.source_dir"] == str(fixture_data_dir)
    assert len(list(load_raw_splits(dataclasses.replace(cfg.data, test_size=80)).train)) == 120

    monkeypatch.delenv("TFDS_DATA_DIR")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert data_source(cfg.data)["data.source_dir"] == str(tmp_path / "tensorflow_datasets")
    assert os.path.isabs(
        data_source(dataclasses.replace(cfg.data, data_dir="x"))["data.source_dir"]
    )
    assert Path(data_source(dataclasses.replace(cfg.data, data_dir="~/d"))["data.source_dir"]) == (
        tmp_path / "d"
    )

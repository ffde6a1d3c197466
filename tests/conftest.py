"""Shared fixtures: a tiny IMDB-shaped TFDS data set made by the tests, and the real data."""

from __future__ import annotations

import fcntl
import gc
import json
import os
import pickle
import random
import shutil
from pathlib import Path

import pytest

from classifier.cli.startup import freeze_collected, import_tensorflow

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


#: ``make check`` sets it: the edit loop's tier. Tests marked ``large`` or ``slow`` are left out
#: (``-m``), and a test that trains a model or starts a process (a ``classify`` command, a
#: server, a browser) skips itself when it comes to that: ``make test`` runs them all.
CHECK_TIER = os.environ.get("CLASSIFY_TESTS") == "check"


def pytest_collectstart(collector) -> None:
    """TensorFlow imported as `classify` imports it (classifier.cli.startup.import_tensorflow:
    freed memory kept, no start-up lines on stderr, which a run without workers would show, no
    Grappler graph rewrites on a CPU), then Python's collector off while the test modules
    import Keras and MLflow (in each process that collects: the workers, not xdist's
    controller)..."""
    import_tensorflow()
    gc.disable()


def pytest_configure(config) -> None:
    """``make check``: in the processes that run tests (a worker, or the one process without
    workers; xdist's controller starts the workers and must not be stopped)."""
    if CHECK_TIER and (hasattr(config, "workerinput") or not config.getoption("numprocesses", 0)):
        _skip_what_make_test_runs()


def _skip_what_make_test_runs() -> None:
    """For ``make check``: training, pretraining and starting a process skip the test instead,
    patched before any test module binds ``train`` by name."""
    import multiprocessing.process
    import subprocess

    import classifier.pretraining.pretrain as pretraining
    import classifier.training.train as training

    def skipper(reason: str):
        def skip(*args, **kwargs):
            pytest.skip(f"{reason}: make test runs it")

        return skip

    training.train = skipper("trains a model")
    pretraining.pretrain = skipper("pretrains a model")
    subprocess.Popen._execute_child = skipper("starts a process")
    multiprocessing.process.BaseProcess.start = skipper("starts a process")


def pytest_collection_finish(session) -> None:
    """...and their objects frozen out of it, as `classify` has them
    (classifier.cli.startup.uncollected_imports)."""
    freeze_collected()


ROOT = Path(__file__).resolve().parents[1]
FIXTURE_SIZES = {"train": 160, "test": 80, "unsupervised": 10}
POSITIVE_WORDS = ["great", "wonderful", "superb", "loved", "brilliant", "moving"]
NEGATIVE_WORDS = ["awful", "boring", "terrible", "hated", "dull", "waste"]
FILLER = ["the", "movie", "film", "plot", "actor", "scene", "story", "was", "and", "it", "a"]
# Words that occur only in the validation part of the fixture's train split (reviews 120+).
VALIDATION_ONLY_WORD = "zyzzyva"


def fixture_review(rng: random.Random, label: int, extra: str = "") -> str:
    """A short synthetic review whose sentiment words match its label."""
    cues = POSITIVE_WORDS if label == 1 else NEGATIVE_WORDS
    words = [rng.choice(FILLER) for _ in range(rng.randint(6, 16))]
    for _ in range(3):
        words.insert(rng.randrange(len(words)), rng.choice(cues))
    text = " ".join(words).capitalize() + "." + extra
    return text.replace(" and ", ", and ", 1) + " <br /><br />The End!"


def write_fixture_tfds(
    root: Path, sizes: dict[str, int] = FIXTURE_SIZES, val_from: int = 120
) -> Path:
    """Write a real TFDS ``imdb_reviews/plain_text/1.0.0`` folder with synthetic reviews.

    Uses the metadata of the prepared copy when present (else a minimal one), so ``tfds.load``
    reads it through the ordinary code path. Labels alternate 0, 1; unsupervised ones are -1.
    """
    import tensorflow as tf

    target = root / "imdb_reviews" / "plain_text" / "1.0.0"
    target.mkdir(parents=True, exist_ok=True)
    (target / "label.labels.txt").write_text("neg\npos\n")
    (target / "features.json").write_text(json.dumps(_FEATURES))
    info = json.loads(json.dumps(_INFO))
    rng = random.Random(1234)
    for split in info["splits"]:
        name, count = split["name"], sizes[split["name"]]
        path = target / f"imdb_reviews-{name}.tfrecord-00000-of-00001"
        with tf.io.TFRecordWriter(str(path)) as writer:
            for index in range(count):
                label = -1 if name == "unsupervised" else index % 2
                extra = f" {VALIDATION_ONLY_WORD}" if name == "train" and index >= val_from else ""
                text = fixture_review(rng, max(label, 0), extra)
                example = tf.train.Example(
                    features=tf.train.Features(
                        feature={
                            "text": tf.train.Feature(
                                bytes_list=tf.train.BytesList(value=[text.encode()])
                            ),
                            "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
                        }
                    )
                )
                writer.write(example.SerializeToString())
        split["shardLengths"] = [str(count)]
        split["numBytes"] = str(path.stat().st_size)
    (target / "dataset_info.json").write_text(json.dumps(info))
    return root


_FEATURES = {
    "featuresDict": {
        "features": {
            "label": {
                "classLabel": {"numClasses": "2"},
                "pythonClassName": "tensorflow_datasets.core.features.class_label_feature.ClassLabel",
            },
            "text": {
                "pythonClassName": "tensorflow_datasets.core.features.text_feature.Text",
                "text": {},
            },
        }
    },
    "pythonClassName": "tensorflow_datasets.core.features.features_dict.FeaturesDict",
}
_INFO = {
    "configDescription": "Plain text",
    "configName": "plain_text",
    "fileFormat": "tfrecord",
    "moduleName": "tensorflow_datasets.datasets.imdb_reviews.imdb_reviews_dataset_builder",
    "name": "imdb_reviews",
    "splits": [
        {"filepathTemplate": "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}", "name": name}
        for name in ("train", "test", "unsupervised")
    ],
    "supervisedKeys": {"tuple": {"items": [{"featureKey": "text"}, {"featureKey": "label"}]}},
    "version": "1.0.0",
}


@pytest.fixture(autouse=True)
def verbose_setting_restored():
    """Put ``CLASSIFY_VERBOSE`` back after each test: an in-process ``classify -v`` sets it in
    ``os.environ`` (what :func:`classifier.cli.startup.import_tensorflow` reads), and every
    ``classify`` subprocess a later test of the same worker starts would inherit it and print
    TensorFlow's start-up lines."""
    before = os.environ.get("CLASSIFY_VERBOSE")
    yield
    if before is None:
        os.environ.pop("CLASSIFY_VERBOSE", None)
    else:
        os.environ["CLASSIFY_VERBOSE"] = before


@pytest.fixture(scope="session")
def fixture_data_dir(tmp_path_factory) -> Path:
    """A TFDS data dir holding a tiny imdb_reviews: train 160 (120 + 40), test 80, unsupervised 10."""
    return write_fixture_tfds(tmp_path_factory.mktemp("tfds"))


def fixture_data_overrides(data_dir, batch_size: int = 16) -> list[str]:
    """Config overrides that point a run at the fixture data, sized to it."""
    return [
        f"data.data_dir={data_dir}",
        "data.download=false",
        "data.train_size=120",
        "data.val_size=40",
        "data.test_size=80",
        "data.vocab_size=64",
        "data.sequence_length=24",
        f"data.batch_size={batch_size}",
        "train.refit=false",  # tests/test_refit.py covers the refit
    ]


@pytest.fixture
def fixture_overrides(fixture_data_dir) -> list[str]:
    """:func:`fixture_data_overrides` for the session's fixture data set."""
    return fixture_data_overrides(fixture_data_dir)


@pytest.fixture(scope="session")
def store_template(tmp_path_factory) -> Path:
    """An empty SQLite tracking store, made once per test session by MLflow itself (its schema
    migrations take 1.5 to 2 s; the workers share it); each module's :func:`store` starts as a
    copy of it. tests/runs/test_tracking.py makes its fresh stores from nothing."""
    from mlflow.tracking import MlflowClient

    def make(folder: Path) -> Path:
        MlflowClient(f"sqlite:///{folder / 'mlflow.db'}").search_experiments()  # the tables
        return folder / "mlflow.db"

    return once_per_session(tmp_path_factory, "mlflow-template", make)


def empty_store(template: Path, folder: Path) -> str:
    """The URI of ``folder/mlflow.db``, a copy of the empty :func:`store_template`."""
    shutil.copyfile(template, folder / "mlflow.db")
    return f"sqlite:///{folder / 'mlflow.db'}"


@pytest.fixture(scope="module")
def store(tmp_path_factory, store_template):
    """A fresh SQLite tracking store for the test module, set as ``MLFLOW_TRACKING_URI``."""
    uri = empty_store(store_template, tmp_path_factory.mktemp("mlflow"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLFLOW_TRACKING_URI", uri)
        yield uri


def real_data_dir() -> Path | None:
    """The prepared IMDB copy: $TFDS_DATA_DIR, else ../shared/tensorflow_datasets, if it holds it."""
    candidates = [os.environ.get("TFDS_DATA_DIR"), ROOT.parent / "shared" / "tensorflow_datasets"]
    for candidate in filter(None, candidates):
        if (Path(candidate) / "imdb_reviews" / "plain_text").is_dir():
            return Path(candidate)
    return None


@pytest.fixture(scope="session")
def imdb_data_dir() -> Path:
    """The real data for tests marked ``large``; under CI=true a missing copy fails, never skips."""
    found = real_data_dir()
    if found is None:
        message = "IMDB data not found: set TFDS_DATA_DIR to a prepared tensorflow_datasets folder"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found


def once_per_session(tmp_path_factory, name: str, make):
    """``make(folder)`` run once in the whole test session, whatever the number of xdist workers:
    the first worker to ask runs it in ``folder`` (shared by the workers) while the others wait
    on a lock, and every worker gets its result (pickled beside it)."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the session's folder, above each worker's own
    folder = root / name
    folder.mkdir(exist_ok=True)
    kept = folder / "result.pickle"
    with (root / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not kept.exists():
            result = make(folder)
            kept.write_bytes(pickle.dumps(result))
        return pickle.loads(kept.read_bytes())


@pytest.fixture(scope="session")
def smoke_run(imdb_data_dir, tmp_path_factory):
    """``configs/smoke.yaml`` trained once on the real data into a temporary MLflow store (once
    per test session: the workers share it).

    Returns ``(tracking_uri, TrainResult)``; the model is registered as ``imdb-sentiment-smoke``.
    """

    def make(folder: Path):
        from classifier.config.schema import load_config
        from classifier.training.train import train

        uri = f"sqlite:///{folder / 'mlflow.db'}"
        cfg = load_config(ROOT / "configs" / "smoke.yaml", [f"data.data_dir={imdb_data_dir}"])
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("MLFLOW_TRACKING_URI", uri)
            return uri, train(cfg, echo=lambda line: None)

    return once_per_session(tmp_path_factory, "smoke-run", make)


# --- a tiny trained model, registered in the module's store (predict, registry, explain) -----


TRAINED_EXPERIMENT = "predict-tests"


@pytest.fixture(scope="session")
def trained_store(tmp_path_factory, store_template, fixture_data_dir):
    """A store holding one run: a tiny encoder trained on the fixture reviews, registered as
    ``imdb-sentiment``; ``(its mlflow.db, TrainResult)``. Trained once per test session (the
    workers share it); each module that uses :func:`trained` gets a copy of the store."""
    from classifier.config.schema import load_config
    from classifier.runs.store_paths import sqlite_path
    from classifier.serving.registry import DEFAULT_MODEL_NAME
    from classifier.training.train import train

    def make(folder: Path):
        uri = empty_store(store_template, folder)
        cfg = load_config(
            None,
            [
                *fixture_data_overrides(fixture_data_dir),
                "model.variant=encoder",
                "model.num_layers=1",
                "train.epochs=4",
                "train.learning_rate=0.01",
                f"train.registered_model={DEFAULT_MODEL_NAME}",
                f"experiment={TRAINED_EXPERIMENT}",
            ],
        )
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("MLFLOW_TRACKING_URI", uri)
            result = train(cfg, echo=lambda line: None)
        return sqlite_path(uri), result

    return once_per_session(tmp_path_factory, "trained-store", make)


@pytest.fixture(scope="module")
def trained(store, trained_store):
    """A tiny encoder trained on the fixture reviews, registered as ``imdb-sentiment`` in the
    module's store: a copy of :func:`trained_store`'s, so that what one module registers or
    moves (another version, an alias) no other module sees. The run's artefacts stay where it
    wrote them (its experiment's folder, which the copy names); the module's new runs in that
    experiment write theirs beside them, each in its own run's folder. Those artefacts are
    shared by every module and test worker: a test that changes one replaces it whole
    (``os.replace``) and puts it back. MLflow's tracking and registry URIs and its active
    experiment are left as training in the module's store leaves them (a test that set them to
    another store may have run before)."""
    import mlflow

    from classifier.runs.store_paths import sqlite_path

    database, result = trained_store
    shutil.copyfile(database, sqlite_path(store))
    mlflow.set_tracking_uri(store)
    mlflow.set_registry_uri(store)
    mlflow.set_experiment(TRAINED_EXPERIMENT)
    return result


@pytest.fixture(scope="module")
def keras_file(trained, tmp_path_factory) -> Path:
    """The run's ``model.keras``, downloaded."""
    import mlflow

    target = tmp_path_factory.mktemp("model")
    return Path(
        mlflow.artifacts.download_artifacts(
            run_id=trained.run_id, artifact_path="model.keras", dst_path=str(target)
        )
    )


@pytest.fixture(scope="module")
def model(keras_file):
    from classifier.serving.registry import load_keras_model

    return load_keras_model(keras_file)


@pytest.fixture
def reviews(tmp_path) -> dict[str, Path]:
    from tests.model_helpers import NEGATIVE, POSITIVE

    files = {"pos": POSITIVE, "neg": NEGATIVE}
    paths = {}
    for name, text in files.items():
        paths[name] = tmp_path / f"{name}.txt"
        paths[name].write_text(text + "\n")
    paths["lines"] = tmp_path / "lines.txt"
    paths["lines"].write_text(f"{NEGATIVE}\n\n{POSITIVE}\r\n{NEGATIVE}")  # line 2 is blank
    return paths


@pytest.fixture(scope="session")
def big_file(tmp_path_factory) -> Path:
    from tests.model_helpers import BIG

    """50 MB of negative words on one line, then a few positive ones at the very end."""
    path = tmp_path_factory.mktemp("big") / "big.txt"
    unit = b"awful boring dull " * 4096
    tail = b" great wonderful superb" * 20 + b"\n"
    whole, rest = divmod(BIG - len(tail), len(unit))
    with path.open("wb") as out:
        for _ in range(whole):
            out.write(unit)
        out.write(b" " * rest + tail)
    assert path.stat().st_size == BIG
    return path


@pytest.fixture(scope="module")
def spec_path(tmp_path_factory, fixture_data_dir) -> Path:
    """The sweep spec of ``tests.sweep_helpers.spec_tree`` on the fixture data, written once."""
    from tests.sweep_helpers import spec_tree, write_spec

    return write_spec(tmp_path_factory.mktemp("spec") / "tiny.yaml", spec_tree(fixture_data_dir))


#: The test files that take longest (measured with ``benchmarks/suite_cpu.py --records``), in the
#: order they start. With ``--no-loadscope-reorder`` (``make test``) xdist's loadfile scheduler
#: hands files out in collection order, so these go first: a long file started last would leave
#: the other workers idle while it runs. (By default xdist orders files by their number of
#: tests, which put the PostgreSQL sweep test and the fuzzer, one or two tests each, last.)
#: Files that mostly wait on servers they stop and start (CPU a fifth of their time) alternate
#: with files that keep a core busy: three server files first left a core idle for the first
#: two minutes (2026-11-28, docs/benchmarks.md).
LONGEST_FIRST = (
    "tests/sweeps/test_server_faults.py",  # 4 minutes, 46 s of CPU: waits on stopped servers
    "tests/training/test_train_resume.py",  # 4 minutes, busy
    "tests/training/test_train.py",
    "tests/training/test_train_kill_anywhere.py",
    "tests/sweeps/test_sweep_postgres.py",  # 2 minutes, half of it waiting
    "tests/serving/test_bundle_real.py",
    "tests/sweeps/test_sweep.py",
    "tests/sweeps/test_server_disk_full.py",  # waits
    "tests/pretraining/test_pretrain.py",
    "tests/data/test_data_real.py",
    "tests/sweeps/test_server_tls.py",  # waits
    "tests/cli/test_fuzz.py",
    "tests/serving/test_predict_real.py",
    "tests/sweeps/test_sweep_search.py",
    "tests/training/test_train_real.py",
    "tests/sweeps/test_sweep_concurrent.py",
)


def pytest_collection_modifyitems(config, items):
    """Move the longest test files to the front, in :data:`LONGEST_FIRST` order; the rest keep
    their order (a stable sort)."""
    rank = {path: index for index, path in enumerate(LONGEST_FIRST)}

    def position(item) -> int:
        path = Path(str(item.fspath)).resolve()
        relative = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else ""
        return rank.get(relative, len(rank))

    items.sort(key=position)

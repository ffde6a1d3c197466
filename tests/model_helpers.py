"""Helpers shared by the tests of predict, registry, explain, reviews and the bag-of-n-grams
models: the CLI runner, the texts, a tiny untrained end-to-end model, a trained fixture model,
lazy Adam in NumPy, and predicting from many threads at once."""

from __future__ import annotations

import contextlib
import logging
import random
import threading
from collections.abc import Iterator

import keras
import mlflow
import numpy as np
from click.testing import CliRunner

from classifier.cli.main import cli
from classifier.config.schema import ModelConfig, load_config
from classifier.data.vectorizer import ReviewVectorizer
from classifier.models.classifier import build_classifier, build_end_to_end
from classifier.serving.registry import load_keras_model
from classifier.training.train import train
from tests.conftest import fixture_data_overrides

POSITIVE = "a great and wonderful film, superb. loved it, brilliant and moving"
NEGATIVE = "awful, boring and dull. a terrible waste, i hated the plot"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
BIG = 50 * 1024 * 1024
VARIANTS = ("encoder", "block", "block_pos", "mha", "attention")


def run(*args: str, stdin: bytes | None = None):
    result = CliRunner().invoke(cli, list(args), input=stdin, prog_name="classify")
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result


def err_lines(result) -> list[str]:
    return result.stderr.splitlines()


def table_rows(result) -> list[list[str]]:
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["label", "P(positive)", "known", "source"]
    return [line.split(maxsplit=3) for line in lines[1:]]


def one_error_line(result, *fragments: str) -> str:
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    (line,) = err_lines(result)
    assert line.startswith("classify: error: ")
    for fragment in fragments:
        assert fragment in line, line
    return line


@contextlib.contextmanager
def tensorflow_log(filtered: bool = False) -> Iterator[list[str]]:
    """The messages TensorFlow's Python logger gives inside the block (what would reach a
    user's terminal as ``WARNING:tensorflow:...``): all of them, or with ``filtered`` those
    that pass the filters set on it (``classify`` sets one:
    :func:`classifier.runs.lifecycle.quiet_libraries`)."""
    seen: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    logger = logging.getLogger("tensorflow")
    filters = list(logger.filters)
    if not filtered:
        logger.filters.clear()
    logger.addHandler(handler)
    try:
        yield seen
    finally:
        logger.removeHandler(handler)
        logger.filters[:] = filters


def untrained(
    variant: str, sequence_length: int = 12, labels: tuple[str, ...] = ("negative", "positive")
) -> keras.Model:
    """A small end-to-end model of ``variant`` with random weights and a seven-word vocabulary,
    of the classes ``labels``."""
    words = ["great", "awful", "film", "the", "plot", "wonderful", "dull"]
    vectorizer = ReviewVectorizer(len(words) + 2, sequence_length, "tail", words)
    cfg = ModelConfig(variant=variant, embed_dim=8, num_heads=2, ff_dim=8, num_layers=2)
    classifier = build_classifier(cfg, len(words) + 2, sequence_length, len(labels))
    return build_end_to_end(vectorizer, classifier, labels)


def train_bag_fixture(
    fixture_data_dir, folder, variant: str, model_name: str, experiment: str, *overrides: str
):
    """Train a bag-of-n-grams ``variant`` (``bow``, ``nbow``, ``nbow_attention``) on the fixture
    reviews as their tests do (4,096 buckets, 4 epochs at Adam 0.05), registered as
    ``model_name``; return ``(result, the logged model.keras loaded, config)``."""
    cfg = load_config(
        None,
        [
            *fixture_data_overrides(fixture_data_dir),
            f"model.variant={variant}",
            "model.ngram_buckets=4096",
            "train.epochs=4",
            "train.learning_rate=0.05",
            f"train.registered_model={model_name}",
            f"experiment={experiment}",
            *overrides,
        ],
    )
    result = train(cfg, echo=lambda line: None)
    local = mlflow.artifacts.download_artifacts(
        run_id=result.run_id, artifact_path="model.keras", dst_path=str(folder)
    )
    return result, load_keras_model(local), cfg


def lazy_adam_reference(table, m, v, step, ids, row_gradients, lr, l2, b1=0.9, b2=0.999, eps=1e-7):
    """TensorFlow Addons' LazyAdam in NumPy: each distinct id's summed gradient (plus the L2
    penalty's) moves that row and its moments; the other rows keep theirs."""
    table, m, v = table.copy(), m.copy(), v.copy()
    for row in np.unique(ids):
        g = row_gradients[ids == row].sum(axis=0) + 2 * l2 * table[row]
        m[row] = b1 * m[row] + (1 - b1) * g
        v[row] = b2 * v[row] + (1 - b2) * g * g
        alpha = lr * np.sqrt(1 - b2**step) / (1 - b1**step)
        table[row] -= alpha * m[row] / (np.sqrt(v[row]) + eps)
    return table, m, v


def mixed_length_texts(count: int, seed: int = 0) -> list[str]:
    """``count`` reviews of 1 to 300 words from a small movie vocabulary, so that batches of
    them take input shapes of many widths."""
    words = (POSITIVE + " " + NEGATIVE).replace(",", "").replace(".", "").split()
    rng = random.Random(seed)
    return [
        " ".join(rng.choice(words) for _ in range(rng.choice([1, 3, 8, 20, 60, 300])))
        for _ in range(count)
    ]


def answers_from_threads(predict, requests: list, clients: int = 16) -> list:
    """``predict(request)`` of every request, ``clients`` threads at once, all released
    together; the answers in request order (an exception is the answer it raised)."""
    start = threading.Barrier(clients)
    answers: list = [None] * len(requests)

    def client(first: int) -> None:
        start.wait()
        for index in range(first, len(requests), clients):
            try:
                answers[index] = predict(requests[index])
            except Exception as error:  # noqa: BLE001 - the test compares it with the answer due
                answers[index] = error

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def assert_threads_get_what_each_gets_alone(pyfunc_model, texts: list[str]) -> None:
    """Requests of 1 to 3 of ``texts``, sent to a loaded pyfunc model
    (:class:`classifier.serving.pyfunc.SentimentModel`) one at a time and then from 16 threads
    at once, get the same answers (but for float rounding: requests that meet are predicted in
    one batch, padded to other widths)."""
    import pandas as pd

    requests = [pd.DataFrame({"review": texts[i : i + 1 + i % 3]}) for i in range(0, len(texts), 2)]
    alone = [pyfunc_model.predict(None, request) for request in requests]
    together = answers_from_threads(lambda request: pyfunc_model.predict(None, request), requests)
    for expected, answer in zip(alone, together, strict=True):
        assert isinstance(answer, pd.DataFrame), answer  # not an exception
        pd.testing.assert_frame_equal(answer, expected, check_exact=False, rtol=0, atol=1e-6)

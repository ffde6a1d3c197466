"""The pyfunc model that ``mlflow models serve`` runs, called from many threads at once as the
scoring server calls it: every answer equals the one given to the same request alone (but for
float rounding: requests that meet are predicted in one batch), on the LiteRT bundle and on the
Keras fall-back (a model logged before bundles); and :class:`Together`, which batches them. The model is the tiny
``encoder`` of ``data/before_the_move/`` (test_saved_before_the_move.py); three classes:
tests/training/test_train_multiclass.py. Over REST, with a real server: test_registry.py.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import mlflow
import numpy as np
import pytest

from classifier.serving.batching import Together
from classifier.serving.litert_engine import load_bundle
from classifier.serving.pyfunc import SentimentModel
from tests.model_helpers import (
    answers_from_threads,
    assert_threads_get_what_each_gets_alone,
    mixed_length_texts,
)

DATA = Path(__file__).parent / "data" / "before_the_move"


def loaded(**artifacts: Path) -> SentimentModel:
    model = SentimentModel()
    context = mlflow.pyfunc.PythonModelContext(
        artifacts={name: str(path) for name, path in artifacts.items()}, model_config={}
    )
    model.load_context(context)
    return model


@pytest.mark.parametrize(
    "artifacts",
    [{"bundle": DATA / "bundle"}, {"keras_model": DATA / "model.keras"}],
    ids=["litert", "keras"],
)
def test_threads_get_the_answers_each_request_gets_alone(artifacts):
    assert_threads_get_what_each_gets_alone(loaded(**artifacts), mixed_length_texts(96))


def test_a_bundle_lends_each_thread_its_own_interpreter():
    bundle = load_bundle(DATA / "bundle")
    rng = np.random.default_rng(0)
    widths = [1 + k % bundle.sequence_length for k in range(160)]
    batches = [rng.integers(2, 50, size=(1 + k % 5, width)) for k, width in enumerate(widths)]
    alone = [bundle.predict_ids(ids) for ids in batches]
    together = answers_from_threads(bundle.predict_ids, batches)
    for expected, answer in zip(alone, together, strict=True):
        np.testing.assert_array_equal(answer, expected)
    assert 1 < bundle.interpreters <= 16  # one per thread at work at once, at most


def test_callers_that_wait_meet_in_one_call_and_each_gets_its_share():
    calls: list[list[int]] = []
    first_running, release = threading.Event(), threading.Event()

    def work(items: list[int]) -> list[int]:
        calls.append(list(items))
        if len(calls) == 1:  # hold the first call until the others have queued
            first_running.set()
            release.wait(10)
        return [10 * item for item in items]

    together = Together(work)
    answers: dict[int, list[int]] = {}
    first = threading.Thread(target=lambda: answers.update({0: together([0])}))
    first.start()
    first_running.wait(10)
    others = [
        threading.Thread(target=lambda k=k: answers.update({k: together([k, k + 100])}))
        for k in range(1, 6)
    ]
    for thread in others:
        thread.start()
    while len(together._queue) < 5:  # all five queued behind the first call
        time.sleep(0.01)
    release.set()
    for thread in [first, *others]:
        thread.join(10)
    assert answers == {k: [10 * k] if k == 0 else [10 * k, 10 * (k + 100)] for k in range(6)}
    assert len(calls) == 2 and sorted(calls[1]) == sorted(
        item for k in range(1, 6) for item in (k, k + 100)
    )


def test_an_error_reaches_every_caller_of_the_call_that_raised_it():
    together = Together(lambda items: [1 / item for item in items])
    assert together([2, 4]) == [0.5, 0.25]
    with pytest.raises(ZeroDivisionError):
        together([1, 0])
    assert together([1]) == [1.0]  # the next call starts afresh

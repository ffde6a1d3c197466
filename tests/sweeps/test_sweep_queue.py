"""The sweep's work queue on Optuna without training anything: storage URLs, launching and
joining a study, point states through failures and retries, and one-line refusals."""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import time

import optuna
import pytest
import sqlalchemy
from optuna.trial import TrialState

from classifier.config.uris import redacted, sweep_storage_url
from classifier.errors import ConfigError, SweepError
from classifier.runs import outages
from classifier.sweeps import queue
from classifier.sweeps.spec import load_spec, search_point
from classifier.sweeps.storage import check_tracking_for, open_storage, resilient, taken_over
from tests.sweep_helpers import invoke, spec_tree, write_spec


@pytest.fixture
def storage(tmp_path):
    return open_storage(f"sqlite:///{tmp_path / 'sweeps.db'}", grace=6)


def launch(storage, points=3, digest="0123456789ab", name="tiny-0123456789ab"):
    return queue.launch(storage, name, digest, "grid", points, make_parent=lambda: "f" * 32)


# --------------------------------------------------------------------------- URLs


@pytest.mark.parametrize(
    ("given", "opened"),
    [
        ("sqlite:////tmp/s.db", "sqlite:////tmp/s.db"),
        (
            "postgresql://optuna@127.0.0.1:5433/optuna",
            "postgresql+psycopg2://optuna@127.0.0.1:5433/optuna",
        ),
        ("postgresql+psycopg2://u:p@db/optuna", "postgresql+psycopg2://u:p@db/optuna"),
        ("postgres://u@db/optuna", "postgresql+psycopg2://u@db/optuna"),
    ],
)
def test_storage_urls_that_open(given, opened):
    assert sweep_storage_url(given) == opened


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("redis://host", "unsupported scheme 'redis'"),
        ("mysql://u@host/db", "unsupported scheme 'mysql'"),
        ("sqlite://relative.db", "a SQLite storage is sqlite:///PATH (three slashes)"),
        ("postgresql://u@host:port/db", "Port could not be cast"),
        ("postgresql://u@host", "no database name"),
        ("postgresql+asyncpg://u@host/db", "driver 'asyncpg' is not installed"),
        ("just-a-name", "not a URL"),
        ("", "not a URL"),
    ],
)
def test_malformed_storage_urls_are_one_line(given, message):
    with pytest.raises(SweepError, match=re.escape(message)) as caught:
        sweep_storage_url(given)
    assert "\n" not in str(caught.value)


def test_passwords_stay_out_of_messages():
    assert redacted("postgresql://u:hunter2@db/optuna") == "postgresql://u:***@db/optuna"
    with pytest.raises(SweepError) as caught:
        sweep_storage_url("postgresql://u:hunter2@db:xx/optuna")
    assert "hunter2" not in str(caught.value)


def test_an_unreachable_server_is_one_line():
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(SweepError, match=r"cannot open it: .*127\.0\.0\.1") as caught:
        open_storage(f"postgresql://u:secret@127.0.0.1:{port}/optuna")
    assert "secret" not in str(caught.value) and "\n" not in str(caught.value)


def test_a_server_storage_needs_a_server_tracking_store():
    with pytest.raises(SweepError, match="workers on other machines cannot see"):
        check_tracking_for("postgresql+psycopg2://u@db/optuna", "sqlite:////work/mlflow.db")
    check_tracking_for("postgresql+psycopg2://u@db/optuna", "http://db:5000")
    check_tracking_for("sqlite:////work/sweeps.db", "sqlite:////work/mlflow.db")


# --------------------------------------------------------------------------- the queue


def test_the_first_worker_launches_and_the_others_join(storage):
    parents = []
    study, launched = queue.launch(
        storage,
        "tiny-0123456789ab",
        "0123456789ab",
        "grid",
        3,
        make_parent=lambda: parents.append(1) or "f" * 32,
    )
    again, joined_launch = launch(storage)
    assert (launched, joined_launch) == (True, False)
    assert parents == [1]  # one parent run, made by the launcher only
    assert again.user_attrs["parent_run_id"] == "f" * 32
    assert queue.counts(again) == {"waiting": 3, "running": 0, "finished": 0, "failed": 0}
    assert [t.user_attrs["point"] for t in again.get_trials()] == [1, 2, 3]


def test_two_workers_reading_one_waiting_point_at_once_take_it_once(tmp_path):
    """The race CI hit (one point trained twice): two workers, each with its own connection,
    both read the waiting trial's row before either writes it. A barrier holds each worker just
    after that read until the other has read too (or 3 s have passed, when the storage makes
    the second wait for the first one's commit)."""
    url = f"sqlite:///{tmp_path / 'sweeps.db'}"
    study, _ = launch(open_storage(url), points=1)
    (waiting,) = study.get_trials()
    barrier = threading.Barrier(2, timeout=3)

    def take(outcomes: list) -> None:
        storage = open_storage(url)
        held = []

        def hold_after_reading_the_row(conn, cursor, statement, *args) -> None:
            if not held and statement.lstrip().startswith("SELECT") and "FROM trials" in statement:
                held.append(1)
                with contextlib.suppress(threading.BrokenBarrierError):
                    barrier.wait()

        sqlalchemy.event.listen(storage.engine, "after_cursor_execute", hold_after_reading_the_row)
        outcomes.append(storage.set_trial_state_values(waiting._trial_id, TrialState.RUNNING))

    outcomes: list[bool] = []
    workers = [threading.Thread(target=take, args=(outcomes,)) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert sorted(outcomes) == [False, True]  # one worker took the point, the other saw it taken


def test_two_workers_creating_one_new_storage_at_once_both_open_it(tmp_path):
    """The race CI hit (a sweep worker exiting with "table alembic_version already exists"):
    two workers open a new sweeps.db at once. A barrier holds each worker just after it has
    looked for Optuna's tables until the other has looked too (or 3 s have passed, when the
    storage makes the second wait for the first one to finish creating them)."""
    url = f"sqlite:///{tmp_path / 'sweeps.db'}"
    barrier = threading.Barrier(2, timeout=3)
    looked = threading.local()

    def hold_after_looking(conn, cursor, statement, *args) -> None:
        if not getattr(looked, "once", False) and "table_info" in statement:
            looked.once = True
            with contextlib.suppress(threading.BrokenBarrierError):
                barrier.wait()

    def open_it(outcomes: list) -> None:
        try:
            outcomes.append(type(open_storage(url)).__name__)
        except SweepError as error:
            outcomes.append(str(error))

    outcomes: list[str] = []
    sqlalchemy.event.listen(sqlalchemy.engine.Engine, "after_cursor_execute", hold_after_looking)
    try:
        workers = [threading.Thread(target=open_it, args=(outcomes,)) for _ in range(2)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    finally:
        sqlalchemy.event.remove(
            sqlalchemy.engine.Engine, "after_cursor_execute", hold_after_looking
        )
    assert outcomes == ["RDBStorage", "RDBStorage"]
    launch(open_storage(url), points=1)  # and the storage works


def test_a_different_spec_under_the_same_name_is_refused(storage):
    launch(storage)
    with pytest.raises(SweepError, match="holds a different spec under the name"):
        launch(storage, digest="ba9876543210")


def test_failures_are_retried_then_shown_failed_and_finished_points_stay(storage):
    """What a worker does with one retry allowed: point 1 fails twice, point 2 finishes."""
    study, _ = launch(storage, points=2)
    numbers = []

    def objective(trial):
        numbers.append(trial.number)
        if trial.user_attrs["point"] == 1:
            raise RuntimeError("diverged")
        return 0.75

    while queue.counts(study)["waiting"]:
        try:
            study.optimize(objective, n_trials=1)
        except RuntimeError:
            failed = next(t for t in study.get_trials() if t.number == numbers[-1])
            if queue.failures(failed) < 1:
                queue.retry(study, failed)
    states = queue.point_states(study)
    assert states[1].state == "failed" and states[1].attempts == 2
    assert states[2].state == "finished" and states[2].value == 0.75
    assert queue.counts(study) == {"waiting": 0, "running": 0, "finished": 1, "failed": 1}
    assert len(numbers) == 3


def test_a_handed_back_point_waits_without_counting_a_retry(storage):
    study, _ = launch(storage, points=1)
    with pytest.raises(KeyboardInterrupt):
        study.optimize(lambda trial: (_ for _ in ()).throw(KeyboardInterrupt), n_trials=1)
    (stopped,) = study.get_trials()
    queue.retry(study, stopped, count=False)
    waiting = study.get_trials()[-1]
    assert waiting.state == optuna.trial.TrialState.WAITING
    assert queue.failures(waiting) == 0 and waiting.user_attrs["point"] == 1
    assert queue.counts(study)["waiting"] == 1


def test_a_search_counts_the_trials_not_drawn_yet_as_waiting(storage):
    study, _ = queue.launch(storage, "s-0", "0", "search", 4, make_parent=lambda: "e" * 32)
    assert study.get_trials() == []
    assert queue.counts(study, planned=4)["waiting"] == 4


# --------------------------------------------------------------------------- search specs


def test_a_search_spec_draws_valid_configs(fixture_data_dir, tmp_path):
    tree = spec_tree(fixture_data_dir)
    del tree["points"], tree["grid"]
    tree["search"] = {
        "trials": 4,
        "seed": 1,
        "space": {
            "train.learning_rate": {"low": 1e-3, "high": 3e-2, "log": True},
            "model.num_layers": {"low": 1, "high": 2},
            "model.variant": ["attention", "encoder"],
        },
    }
    spec = load_spec(write_spec(tmp_path / "search.yaml", tree))
    point = search_point(spec, 3, {"train.learning_rate": 0.004, "model.variant": "encoder"})
    assert point.label == "trial 3" and point.config.train.learning_rate == 0.004
    assert point.config.model.variant == "encoder"
    with pytest.raises(ConfigError, match="trial 2 .*learning_rate"):
        search_point(spec, 2, {"train.learning_rate": -1.0})
    dry = invoke("sweep", str(spec.path), "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert "a search of 4 trials" in dry.output
    assert "train.learning_rate: 0.001 to 0.03 (log scale)" in dry.output
    assert "model.variant: one of attention, encoder" in dry.output


@pytest.mark.parametrize(
    ("search", "message"),
    [
        ({"trials": 0, "space": {"train.seed": [1]}}, "search.trials must be a whole number"),
        ({"trials": 2, "space": {}}, "search.space must map config keys"),
        ({"trials": 2, "space": {"train.learning_rate": {"low": 1, "high": 0}}}, "low < high"),
        (
            {"trials": 2, "space": {"train.learning_rate": {"low": 0, "high": 1, "log": True}}},
            "a log range needs low > 0",
        ),
        ({"trials": 2, "space": {"x": {"low": float("nan"), "high": 1}}}, "finite numbers"),
        ({"trials": 2, "sampler": "grid", "space": {"train.seed": [1]}}, "unknown key 'sampler'"),
    ],
)
def test_bad_search_sections_are_one_line(fixture_data_dir, tmp_path, search, message):
    tree = spec_tree(fixture_data_dir)
    del tree["points"], tree["grid"]
    tree["search"] = search
    path = write_spec(tmp_path / "bad.yaml", tree)
    result = invoke("sweep", str(path), "--dry-run")
    assert result.exit_code == 2, result.output
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_a_spec_with_a_grid_and_a_search_is_refused(fixture_data_dir, tmp_path):
    tree = spec_tree(fixture_data_dir, search={"trials": 2, "space": {"train.seed": [1, 2]}})
    result = invoke("sweep", str(write_spec(tmp_path / "both.yaml", tree)), "--dry-run")
    assert result.exit_code == 2
    assert "a spec has points and a grid, or a search, not both" in result.stderr


# --------------------------------------------------------------------------- the command


def test_bad_storage_urls_are_refused_before_anything_starts(spec_path, store):
    result = invoke("sweep", str(spec_path), "--storage", "redis://host/0")
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == (
        "classify: error: --storage 'redis://host/0': unsupported scheme 'redis'; give "
        "sqlite:///PATH or postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE"
    )


def test_a_server_storage_with_a_local_tracking_store_is_refused(spec_path, store):
    result = invoke("sweep", str(spec_path), "--storage", "postgresql://u@127.0.0.1:1/optuna")
    assert result.exit_code == 2, result.output
    assert "is a local file that workers on other machines cannot see" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_status_of_a_sweep_not_launched(spec_path, store, tmp_path):
    result = invoke("sweep", str(spec_path), "--status")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("sweep tiny: not launched in sqlite:///")
    assert result.output.strip().endswith(f"start it with: classify sweep {spec_path}")


# --------------------------------------------------------------------------- a server away


class Server:
    """A database server that is away while ``away`` is True: the wrapped calls raise
    PostgreSQL's "connection refused" as SQLAlchemy does."""

    def __init__(self):
        self.away = True

    def wrap(self, call):
        def maybe_away(*args, **kwargs):
            if self.away:
                error = Exception('connection to server at "127.0.0.1" failed: Connection refused')
                raise sqlalchemy.exc.OperationalError("SELECT 1", {}, error)
            return call(*args, **kwargs)

        return maybe_away


def test_a_storage_waits_while_its_server_is_away_and_says_so_once(storage, monkeypatch):
    study, _ = launch(storage, points=1)
    trial_id = study.get_trials()[0]._trial_id
    server, lines = Server(), []
    real_get_trial = storage.get_trial
    storage.get_trial = server.wrap(real_get_trial)

    def back_after_three_tries(seconds):
        tries.append(seconds)
        server.away = len(tries) < 3

    tries: list[float] = []
    monkeypatch.setattr(outages.time, "sleep", back_after_three_tries)
    resilient(storage, outages.Outage("the sweep storage S", lines.append))
    assert storage.get_trial(trial_id).number == 0
    assert tries == [outages.RETRY_EVERY_S] * 3
    assert lines[0] == (
        "the sweep storage S is unreachable (connection refused); retrying until it is back"
    )
    assert re.fullmatch(r"the sweep storage S is back after \d+ s", lines[1]) and len(lines) == 2
    with pytest.raises(KeyError):  # an error that is not an outage is raised at once
        storage.get_trial(12345)


def test_a_heartbeat_survives_an_outage_and_stops_a_point_taken_over_meanwhile(
    storage, monkeypatch
):
    """Optuna's heartbeat thread used to die of the first dropped connection. Here a beat that
    cannot be recorded is skipped (the next one tries again), and the first beat after missed
    ones finds out whether another worker took the point over meanwhile: then the main thread is
    interrupted, and the worker leaves the point to the other one."""
    study, _ = launch(storage, points=1)
    trial = study.ask()  # RUNNING: this worker's point
    server, lines = Server(), []
    storage.record_heartbeat = server.wrap(storage.record_heartbeat)
    resilient(storage, outages.Outage("the sweep storage S", lines.append))
    storage.record_heartbeat(trial._trial_id)  # away: skipped, no error
    assert lines == [
        "the sweep storage S is unreachable (connection refused); retrying until it is back"
    ]
    study.tell(trial, state=TrialState.FAIL)  # what another worker does with a stale point
    server.away = False
    with pytest.raises(KeyboardInterrupt):
        storage.record_heartbeat(trial._trial_id)
        time.sleep(1)  # the interrupt reaches the main thread here at the latest
    assert trial._trial_id in taken_over
    assert lines[1].startswith("the sweep storage S is back after ")

"""The artefact disk of ``make server``'s MLflow server fills while a point of a real
``classify sweep`` worker checkpoints (a tmpfs of its own, filled by the test): the point fails
in one line and is handed back, and once there is room again it resumes from its last whole
checkpoint. Every point ends as one FINISHED child run with every epoch's metrics once."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys

from mlflow.tracking import MlflowClient

from classifier.runs.tracking import PARENT_TAG
from tests.servers import started_server, wait_for_line
from tests.sweep_helpers import spec_tree, write_spec


def test_a_full_artefact_disk_fails_the_point_in_one_line_and_it_is_retried_later(
    fixture_data_dir, tmp_path, monkeypatch
):
    """The server's artefact disk fills while a point checkpoints: one line, the point handed
    back; once there is room again the next point trains and the first one resumes from its
    last whole checkpoint. (The worker's MLflow client retries a server error twice here, not
    seven times with minutes of backoff, to keep the test short.)"""
    epochs = 4
    with started_server(artifact_disk_mb=64) as server:
        tree = spec_tree(fixture_data_dir, name="full", experiment="sweep-disk-full")
        tree["points"] = [{"model.variant": "block"}]
        tree["grid"] = {"train.seed": [1, 2]}
        tree["overrides"]["train.epochs"] = epochs
        tree["overrides"]["data.batch_size"] = 2
        spec = write_spec(tmp_path / "full.yaml", tree)
        env = server.env(
            MLFLOW_HTTP_REQUEST_MAX_RETRIES="2", MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR="1"
        )
        log = tmp_path / "worker.log"
        command = [sys.executable, "-m", "classifier", "sweep", str(spec)]
        with log.open("w") as out:
            worker = subprocess.Popen(
                [*command, "--storage", server.storage],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            wait_for_line(log, r"^epoch  2/", worker)
            filler = server.folder / "artifacts" / "filler"
            with filler.open("wb") as full, contextlib.suppress(OSError):
                while True:  # until "No space left on device"
                    full.write(b"\0" * (1 << 20))
            wait_for_line(log, r"^failed \[1/2\]", worker)
            filler.unlink()
            assert worker.wait(timeout=600) == 0, log.read_text()[-3000:]
        finally:
            worker.kill()
        output = log.read_text()
        assert "Traceback" not in output and "Retrying" not in output, output
        # Point 1 fails while checkpointing; point 2, started before the disk is freed, may
        # fail too (at its first artefact). Each failure is one line, and tried again.
        failed = [line for line in output.splitlines() if line.startswith("failed ")]
        assert failed[0].startswith("failed [1/2] block seed=1: "), failed
        assert re.fullmatch(
            r"failed \[1/2\] block seed=1: the MLflow server answered 500 when storing "
            r"checkpoint/(odd|even)/\S+ \(is its artefact disk full\? its log says\); the "
            r"checkpoint before it is kept; tried again later \(retry 1 of 2\)",
            failed[0],
        ), failed
        for line in failed[1:]:
            assert re.fullmatch(
                r"failed \[2/2\] block seed=2: the MLflow server answered 500 when storing \S+ "
                r"\(is its artefact disk full\? its log says\)(; the checkpoint before it is "
                r"kept)?; tried again later \(retry 1 of 2\)",
                line,
            ), failed
        assert re.search(r"^resume \[1/2\] block seed=1: run \w+ \(FAILED\)$", output, re.M)

        for name, value in server.worker.items():
            monkeypatch.setenv(name, value)
        client = MlflowClient(server.tracking)
        experiment = client.get_experiment_by_name("sweep-disk-full")
        children = [
            run
            for run in client.search_runs([experiment.experiment_id])
            if PARENT_TAG in run.data.tags
        ]
        assert len(children) == 2 and {run.info.status for run in children} == {"FINISHED"}
        for child in children:
            steps = [m.step for m in client.get_metric_history(child.info.run_id, "val_accuracy")]
            assert sorted(steps) == list(range(1, epochs + 1))

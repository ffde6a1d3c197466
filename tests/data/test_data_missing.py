"""Missing, partial or unreachable data: one line at once, no download try, nothing left behind."""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import pytest
import tensorflow_datasets as tfds
from click.testing import CliRunner

from classifier.cli.main import cli
from classifier.config.schema import load_config
from classifier.data import imdb as imdb_source
from classifier.data import pipeline as data
from classifier.errors import DataNotFoundError
from tests.conftest import fixture_data_overrides, write_fixture_tfds

VERSION_DIR = Path("imdb_reviews") / "plain_text" / "1.0.0"
FAST = 5.0  # seconds: "at once", with room for a busy machine


@pytest.fixture
def no_download(monkeypatch):
    """Any TFDS download attempt fails at once instead of retrying for minutes."""

    def refuse(self, *args, **kwargs):
        raise ConnectionError("test: TFDS tried to download")

    monkeypatch.setattr(tfds.download.DownloadManager, "download", refuse)


@pytest.fixture
def network_calls(monkeypatch) -> list[str]:
    """Every attempt to resolve a name or open a connection, each refused and recorded."""
    calls: list[str] = []

    def refuse(name):
        def call(*args, **kwargs):
            calls.append(name)
            raise OSError(f"test: no network ({name})")

        return call

    monkeypatch.setattr(socket, "getaddrinfo", refuse("getaddrinfo"))
    monkeypatch.setattr(socket, "create_connection", refuse("create_connection"))
    monkeypatch.setattr(socket.socket, "connect", refuse("connect"))
    return calls


def data_cfg(data_dir, *overrides: str, download: bool = False):
    items = fixture_data_overrides(data_dir) if data_dir else ["data.data_dir=null"]
    return load_config(None, [*items, f"data.download={str(download).lower()}", *overrides]).data


def one_line_error(cfg, call=data.load_raw_splits) -> tuple[str, float]:
    start = time.perf_counter()
    with pytest.raises(DataNotFoundError) as raised:
        call(cfg)
    message = str(raised.value)
    assert "\n" not in message and "Traceback" not in message
    return message, time.perf_counter() - start


def test_missing_data_without_network_fails_at_once_and_leaves_no_folder(
    tmp_path, monkeypatch, no_download
):
    checks: list[str] = []
    monkeypatch.setattr(
        imdb_source,
        "network_available",
        lambda *a, **k: checks.append("asked") or False,
        raising=False,
    )
    missing = tmp_path / "absent" / "tfds"
    message, seconds = one_line_error(data_cfg(missing, download=True))
    assert seconds < FAST
    assert checks == ["asked"]  # download allowed: the network was checked, and found down
    assert str(missing / VERSION_DIR) in message  # the folder looked in
    assert "TFDS_DATA_DIR" in message and "--data-dir" in message and "network" in message
    assert sorted(tmp_path.iterdir()) == []  # no stub imdb_reviews/, downloads/ or parents


def test_missing_data_with_download_disabled_never_touches_the_network(
    tmp_path, monkeypatch, network_calls, no_download
):
    monkeypatch.setattr(
        imdb_source,
        "network_available",
        lambda *a, **k: network_calls.append("check"),
        raising=False,
    )
    # TFDS reads TFDS_DATA_DIR once, at import; the data directory must follow it as it is now.
    monkeypatch.setenv("TFDS_DATA_DIR", str(tmp_path / "env-tfds"))
    message, seconds = one_line_error(data_cfg(None, download=False))
    assert seconds < FAST
    assert network_calls == []
    assert str(tmp_path / "env-tfds" / VERSION_DIR) in message and "TFDS_DATA_DIR" in message
    assert "--data-dir" in message and "download disabled" in message
    assert sorted(tmp_path.iterdir()) == []


def test_cli_reports_missing_data_in_one_line_without_network(tmp_path, monkeypatch, no_download):
    monkeypatch.setattr(imdb_source, "network_available", lambda *a, **k: False, raising=False)
    missing = tmp_path / "nonexistent"
    start = time.perf_counter()
    result = CliRunner().invoke(cli, ["data", "--data-dir", str(missing)], prog_name="classify")
    seconds = time.perf_counter() - start
    assert result.exit_code == 2, result.output
    assert result.stdout == ""  # no "Downloading and preparing dataset..." line
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("classify: error: IMDB data")
    assert str(missing / VERSION_DIR) in lines[0]
    assert seconds < FAST and not missing.exists()


def test_network_check_answers_within_its_timeout(monkeypatch):
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        assert imdb_source.network_available(f"http://127.0.0.1:{port}/x.tar.gz", timeout=2) is True
    assert imdb_source.network_available(f"http://127.0.0.1:{port}/x.tar.gz", timeout=2) is False

    release = threading.Event()

    def hang(*args, **kwargs):  # a name lookup that hangs, as with a dead DNS server
        release.wait(30)
        raise OSError("test: gave up")

    monkeypatch.setattr(socket, "create_connection", hang)
    start = time.perf_counter()
    assert imdb_source.network_available("http://example.invalid/x.tar.gz", timeout=0.5) is False
    assert time.perf_counter() - start < 1.5
    release.set()


def fake_failed_download(created: list[Path]):
    """The IMDB builder's ``download_and_prepare`` (what ``tfds.load`` calls to download),
    leaving what a real failed download left here, then failing."""

    def download_and_prepare(builder, *args, **kwargs):
        root = Path(builder.data_dir_root)
        stub = [
            root / "downloads" / "imdb_reviews" / "ai.stanfor.edu_amaas_aclImdb_v1.tar.gz.tmp.1",
            root / "downloads" / "extracted",
            root / "imdb_reviews" / "plain_text" / "incomplete.ABC_1.0.0",
            root / "imdb_reviews" / ".config",
        ]
        for folder in stub:
            folder.mkdir(parents=True, exist_ok=True)
        (root / "imdb_reviews" / ".config" / "metadata.json").write_text("{}")
        created.extend(stub)
        raise ConnectionError("Max retries exceeded with url: /~amaas/data/aclImdb_v1.tar.gz")

    return download_and_prepare


def test_a_failed_download_removes_the_folders_it_made(tmp_path, monkeypatch):
    created: list[Path] = []
    monkeypatch.setattr(imdb_source, "network_available", lambda *a, **k: True, raising=False)
    monkeypatch.setattr(
        imdb_source.imdb_builder_cls(), "download_and_prepare", fake_failed_download(created)
    )
    missing = tmp_path / "new" / "tfds"
    message, _ = one_line_error(data_cfg(missing, download=True), data.load_unsupervised)
    assert created and "could not be downloaded" in message
    assert sorted(tmp_path.iterdir()) == []  # "new/" too: the attempt made it


def test_a_failed_download_keeps_what_was_there_before(tmp_path, monkeypatch):
    created: list[Path] = []
    monkeypatch.setattr(imdb_source, "network_available", lambda *a, **k: True, raising=False)
    monkeypatch.setattr(
        imdb_source.imdb_builder_cls(), "download_and_prepare", fake_failed_download(created)
    )
    keep = [tmp_path / "notes.txt", tmp_path / "mnist" / "3.0.1", tmp_path / "downloads" / "mnist"]
    keep[0].write_text("mine")
    keep[1].mkdir(parents=True)
    keep[2].mkdir(parents=True)
    one_line_error(data_cfg(tmp_path, download=True), data.load_unsupervised)
    assert created
    assert all(path.exists() for path in keep)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["downloads", "mnist", "notes.txt"]
    assert [p.name for p in (tmp_path / "downloads").iterdir()] == ["mnist"]


def corrupt(kind: str, version_dir: Path) -> None:
    train = version_dir / "imdb_reviews-train.tfrecord-00000-of-00001"
    if kind == "missing data file":
        train.unlink()
    elif kind == "empty data file":
        train.write_bytes(b"")
    elif kind == "truncated data file":
        train.write_bytes(train.read_bytes()[:200])
    elif kind == "invalid dataset_info.json":
        (version_dir / "dataset_info.json").write_text("{not json")
    elif kind == "no dataset_info.json":
        (version_dir / "dataset_info.json").unlink()


@pytest.mark.parametrize(
    "kind",
    [
        "missing data file",
        "empty data file",
        "truncated data file",
        "invalid dataset_info.json",
        "no dataset_info.json",
    ],
)
def test_a_partial_copy_fails_in_one_line(tmp_path, kind, network_calls, no_download):
    root = write_fixture_tfds(tmp_path / "tfds")
    corrupt(kind, root / VERSION_DIR)
    before = sorted(str(path) for path in root.rglob("*"))
    message, seconds = one_line_error(data_cfg(root), data.describe)  # what `classify data` does
    assert str(root / VERSION_DIR) in message and "--data-dir" in message
    assert seconds < FAST and network_calls == []
    assert sorted(str(path) for path in root.rglob("*")) == before


def test_a_data_dir_that_is_a_file_fails_in_one_line(tmp_path, network_calls, no_download):
    path = tmp_path / "tfds"
    path.write_text("not a folder")
    message, seconds = one_line_error(data_cfg(path, download=True))
    assert f"{path} (--data-dir) is not a folder" in message and "TFDS_DATA_DIR" in message
    assert seconds < FAST and network_calls == []


def test_an_unreadable_data_dir_fails_in_one_line(tmp_path, network_calls, no_download):
    root = write_fixture_tfds(tmp_path / "tfds")
    root.chmod(0)
    if os.access(root, os.R_OK):  # root (CAP_DAC_OVERRIDE): permissions do not stop reads
        root.chmod(0o755)
        pytest.skip("running as root: a folder without read permission is still readable")
    try:
        message, _ = one_line_error(data_cfg(root, download=True))
    finally:
        root.chmod(0o755)
    assert f"cannot read {root}" in message and "--data-dir" in message
    assert network_calls == []


def test_the_cause_of_a_read_error_is_cut_at_a_word_boundary(
    fixture_data_dir, monkeypatch, network_calls
):
    def failing_read(*args, **kwargs):
        raise OSError("abcdefghij " * 40)  # 160 characters end inside a word

    monkeypatch.setattr(imdb_source.imdb_builder_cls(), "as_dataset", failing_read)
    message, _ = one_line_error(data_cfg(fixture_data_dir))
    cause = message.rsplit("(OSError: ", 1)[1].rstrip(")")
    assert cause.endswith("...") and len(cause) <= 160
    assert set(cause.removesuffix("...").split()) == {"abcdefghij"}

"""Waiting for a server a test started (``mlflow server``, ``mlflow models serve``)."""

from __future__ import annotations

import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest


def wait_until_answering(
    url: str, process: subprocess.Popen, log: Path, timeout: float, interval: float
) -> None:
    """Poll ``url`` until it answers 200; fail with the log's tail if the server exits first or
    does not answer within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            pytest.fail(f"the server exited:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        if time.monotonic() > deadline:
            pytest.fail(f"no answer from {url} within {timeout:.0f} s:\n{log.read_text()[-3000:]}")
        time.sleep(interval)

"""Headless Chromium (Debian's ``chromium`` package) on an MLflow UI: what
``scripts/screenshot_mlflow_ui.py`` and the UI's browser test (``tests/runs/test_ui_browser.py``)
share. Start a server, wait until it is healthy, let Chromium render a page (a screenshot, or
its DOM), stop the server by its process group.

Example (a server already started in its own session)::

    wait_healthy("http://127.0.0.1:5000", server, Path("server.log"))
    html = dump_dom(shutil.which("chromium"), "http://127.0.0.1:5000/#/experiments/1/runs")
    stop(server)
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    # Headless Chromium reports no hover-capable pointer ("(hover: none)"), and plotly.js then
    # shows every chart's mode bar all the time, over the top right of the plot; a mouse-like
    # pointer keeps the mode bars hidden as on a desktop browser.
    "--blink-settings=primaryHoverType=2,availableHoverTypes=2,"
    "primaryPointerType=4,availablePointerTypes=4",
]
# Chromium resolves *.localhost to the loopback address. Under a name other than localhost or 127.0.0.1
# the UI does not open its assistant panel over a third of the page; the server is told to
# accept that name (Host header and same-origin POSTs) and stays bound to 127.0.0.1.
BROWSER_HOST = "mlflow-ui.localhost"


def free_port() -> int:
    """A TCP port free on the loopback address now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_healthy(base: str, server: subprocess.Popen, log: Path, timeout: float = 90) -> None:
    """Wait until the MLflow server at ``base`` answers ``/health``; exit with its log's tail
    if it stops or does not answer within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit(f"mlflow ui exited ({server.returncode}):\n{log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{base}/health", timeout=2) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.5)
    sys.exit(f"mlflow ui was not healthy within {timeout:.0f} s; see {log}")


def screenshot(chromium: str, url: str, output: Path, window_size: str, budget_ms: int) -> None:
    """Let headless Chromium load ``url`` and write a PNG of the window."""
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        command = [
            chromium,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile}",
            f"--screenshot={output}",
            f"--window-size={window_size}",
            f"--virtual-time-budget={budget_ms}",
            url,
        ]
        print(f"chromium: {url}")
        done = subprocess.run(command, capture_output=True, text=True, timeout=180)
    if done.returncode != 0 or not output.is_file():
        sys.exit(f"chromium failed ({done.returncode}):\n{done.stderr[-2000:]}")


def stop(server: subprocess.Popen) -> None:
    """Stop the server and its workers by its process group (its PID)."""
    if server.poll() is not None:
        return
    os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=15)


def dump_dom(
    chromium: str, url: str, budget_ms: int = 30000, window_size: str = "1600,1000"
) -> str:
    """The page at ``url`` as headless Chromium has rendered it after ``budget_ms`` of virtual
    time (its scripts run, its requests answered): the DOM as HTML."""
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        command = [
            chromium,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile}",
            "--dump-dom",
            f"--window-size={window_size}",
            f"--virtual-time-budget={budget_ms}",
            url,
        ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=180)
    if done.returncode != 0:
        sys.exit(f"chromium failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return done.stdout

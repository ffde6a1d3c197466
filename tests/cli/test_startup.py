"""What every command that trains sets up before TensorFlow: glibc's malloc keeps freed memory,
Python's cycle collector leaves the libraries' objects alone, and on a CPU TensorFlow runs each
traced graph as traced (no Grappler rewrites)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from classifier.cli.startup import COLLECTOR_THRESHOLDS, keep_freed_memory

# A training step's pattern: blocks of a few MB allocated, written, freed, again and again.
STEPS = """
import ctypes, resource, sys
from classifier.cli.startup import keep_freed_memory
kept = keep_freed_memory() if sys.argv[1] == "keep" else False
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
size = 4 * 2**20
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(30):
    blocks = [libc.malloc(size) for _ in range(3)]
    for block in blocks:
        ctypes.memset(block, 1, size)
    for block in blocks:
        libc.free(block)
print(kept, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def page_faults(mode: str) -> tuple[str, int]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("MALLOC_")}
    done = subprocess.run(
        [sys.executable, "-c", STEPS, mode],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=60,
    )
    kept, faults = done.stdout.split()
    return kept, int(faults)


def huge_pages_always() -> bool:
    """Transparent huge pages for every mapping: 2 MiB pages, far fewer faults to count."""
    path = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    return path.is_file() and "[always]" in path.read_text()


@pytest.mark.skipif(sys.platform != "linux", reason="glibc's malloc")
@pytest.mark.skipif(huge_pages_always(), reason="transparent huge pages: always")
def test_freed_memory_is_reused_without_page_faults():
    pages = 30 * 3 * 1024  # 30 rounds of 3 blocks of 1,024 pages
    kept, default = page_faults("default")
    assert kept == "False" and default > pages / 2  # most rounds fault their blocks in again
    kept, keep = page_faults("keep")
    assert kept == "True" and keep < pages / 10  # the first round only


def test_a_users_own_malloc_settings_win(monkeypatch):
    monkeypatch.setenv("MALLOC_ARENA_MAX", "2")
    assert keep_freed_memory() is False


# TensorFlow imported as a command imports it, in a fresh process: what the collector did.
IMPORT = """
import gc, json
from classifier.cli.startup import import_tensorflow
before = [generation["collections"] for generation in gc.get_stats()]
import_tensorflow()
after = [generation["collections"] for generation in gc.get_stats()]
frozen = gc.get_freeze_count()
import tensorflow as tf

class Cycle:
    pass

cycle = Cycle()
cycle.me = cycle
del cycle
print(json.dumps({
    "collections": [a - b for a, b in zip(after, before)],
    "frozen": frozen,
    "enabled": gc.isenabled(),
    "threshold": gc.get_threshold(),
    "collected": gc.collect(),
    "gpus": len(tf.config.list_physical_devices("GPU")),
    "grappler_off": tf.config.optimizer.get_experimental_options().get("disable_meta_optimizer"),
}))
"""


def test_tensorflow_comes_in_uncollected_and_without_graph_rewrites_on_a_cpu():
    done = subprocess.run(
        [sys.executable, "-c", IMPORT], capture_output=True, text=True, check=True, timeout=120
    )
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["collections"] == [0, 0, 0]  # by default hundreds, a few of them full
    assert seen["frozen"] > 500_000  # TensorFlow, Keras and their dependencies' objects
    assert seen["enabled"] and tuple(seen["threshold"]) == COLLECTOR_THRESHOLDS
    assert seen["collected"] >= 1  # a cycle made afterwards is still collected
    # Grappler's graph rewrites off where TensorFlow sees no GPU (TensorFlow's default: on).
    assert seen["grappler_off"] is (True if seen["gpus"] == 0 else None), seen

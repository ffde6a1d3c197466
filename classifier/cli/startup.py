"""What a command does before its slow imports: check the tracking store (a bad one fails in
seconds), then import TensorFlow without its C++ start-up lines, with glibc's malloc set to keep
the memory it frees, Python's cycle collector kept off its modules, and on as many threads as
asked. Imports nothing heavy itself.

Example (in a click command)::

    reach_store()  # one line naming MLFLOW_TRACKING_URI if it is unusable
    import_tensorflow()  # quiet unless CLASSIFY_VERBOSE=1
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import sys
from collections.abc import Iterator

# glibc's mallopt parameters (malloc.h) and the values keep_freed_memory gives them.
M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3
MALLOC_SETTINGS = (
    (M_MMAP_THRESHOLD, 32 * 2**20),  # glibc's largest: blocks up to 32 MiB come from its heaps
    (M_TRIM_THRESHOLD, 2**30),  # the free top of a heap goes back to the kernel beyond 1 GiB
    (M_TOP_PAD, 64 * 2**20),  # a heap grows by 64 MiB at least
)
#: Python's collector thresholds once the libraries are in (gc.set_threshold): the youngest
#: generation collected every 10,000 new objects instead of 700; the older ones as by default.
COLLECTOR_THRESHOLDS = (10_000, 10, 10)


def import_tensorflow(threads: int | None = None) -> None:
    """Import TensorFlow with file descriptor 2 on /dev/null (unless verbose): its C++ side
    prints oneDNN and absl lines at import even with ``TF_CPP_MIN_LOG_LEVEL=3``. Only the
    import is silenced, so an import error's traceback and everything after still shows.
    Before the import, :func:`keep_freed_memory` and libpq (:func:`load_libpq_first`); after
    it, ``threads`` (:func:`limit_threads`) and, on a machine without a GPU, no graph
    rewriting (:func:`graph_rewrites_off`). The import runs with the cycle collector off and
    leaves its objects out of later collections (:func:`uncollected_imports`)."""
    if "tensorflow" not in sys.modules:
        keep_freed_memory()
        with uncollected_imports():
            load_libpq_first()
            if os.environ.get("CLASSIFY_VERBOSE") != "1":
                _import_silenced()
            else:
                import tensorflow  # noqa: F401
        graph_rewrites_off()
    limit_threads(threads)


def graph_rewrites_off() -> bool:
    """Turn off Grappler, TensorFlow's rewriting of each traced function's graph before its
    first call (constant folding, arithmetic simplification, op fusion), where TensorFlow sees
    no GPU; True where it did.

    On 2 CPU cores its passes cost 0.25 to 0.3 s of a test fixture's run inside ``train()``
    (each traced function is rewritten once: the training and evaluation steps, the serving
    and export functions) and bought nothing measurable afterwards: training throughput on
    4,000 IMDB reviews was the same within the runs' spread with and without them, for the
    encoder, ``block``, ``nbow`` and ``bow``, with the same test accuracies
    (docs/benchmarks.md). On a GPU its fusions and layout choices may pay, unmeasured here, so
    they stay. The LiteRT converter runs its own passes.

    Example::

        graph_rewrites_off()  # True on a CPU-only machine
    """
    import tensorflow as tf

    if tf.config.list_physical_devices("GPU"):
        return False
    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})
    return True


@contextlib.contextmanager
def uncollected_imports() -> Iterator[None]:
    """Python's cycle collector off while the block imports, then every object alive frozen
    (``gc.freeze``: left out of every later collection) and the collector on again, at
    :data:`COLLECTOR_THRESHOLDS`.

    TensorFlow and Keras leave about 670,000 long-lived objects (modules, functions, protobuf
    descriptors): by default the collector walks them again and again while they are imported
    (about 900 collections, 6 of them full), at every full collection after (tracing a model
    allocates enough for some) and at the process's exit. A process training the test
    fixture's run took 11.6 s from start to exit by default, 9.8 s this way (medians of 3,
    ``benchmarks/run_fixed_cost.py``, docs/benchmarks.md). Frozen objects are still freed when
    no longer referenced; only cycles among them stay.

    Example::

        with uncollected_imports():
            import tensorflow  # gc.get_freeze_count() > 0 after the block
    """
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        freeze_collected(enable=was_on)


def freeze_collected(enable: bool = True) -> None:
    """Leave every object alive now out of later collections (``gc.freeze``), set the
    collector's :data:`COLLECTOR_THRESHOLDS` and turn it on (unless ``enable`` is False): the
    end of :func:`uncollected_imports`, and of the test suite's collection (its conftest turns
    the collector off before the test modules import TensorFlow).

    Example::

        freeze_collected()  # gc.get_threshold() == COLLECTOR_THRESHOLDS
    """
    gc.freeze()
    gc.set_threshold(*COLLECTOR_THRESHOLDS)
    if enable:
        gc.enable()


def load_libpq_first() -> None:
    """Load psycopg2 (libpq and its OpenSSL) before TensorFlow, which brings BoringSSL: the
    other way round, the first TLS connection to PostgreSQL (a sweep storage of ``make server
    LISTEN=...``) ends the process with a segmentation fault (psycopg2-binary 2.9 after
    TensorFlow 2.21, seen here 2026-11-26). About 17 ms."""
    import psycopg2  # noqa: F401 - loaded for its libraries


def keep_freed_memory() -> bool:
    """Let glibc's malloc keep the memory that TensorFlow frees, instead of handing it back to
    the kernel and page-faulting it in again at the next step; True where it was set.

    By default glibc gives the free top of a heap back beyond a threshold that starts at 128
    KiB, and serves large blocks with mmap, unmapped again on free. ``nbow``'s training steps
    allocate and free many tensors of up to tens of MB (the gradients and Adam's updates of its
    4.2 million n-gram rows): 8,400 minor page faults a step, and a quarter of the step's time
    (``benchmarks/allocator.py``). Blocks over 32 MiB are mmapped still (glibc's limit). A
    user's own ``MALLOC_*`` settings win; other C libraries are left alone.

    Example::

        keep_freed_memory()  # True on Linux with glibc, before TensorFlow is imported
    """
    if sys.platform != "linux" or any(name.startswith("MALLOC_") for name in os.environ):
        return False
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):  # not glibc
        return False
    return [mallopt(name, value) for name, value in MALLOC_SETTINGS] == [1, 1, 1]


def _import_silenced() -> None:
    saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    try:
        import tensorflow  # noqa: F401
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def limit_threads(threads: int | None) -> None:
    """Run TensorFlow's ops on ``threads`` threads (within an op, and as many ops at once), or
    on TensorFlow's default (one per core) for None; before the first op, as
    :func:`import_tensorflow` calls it. Two sweep workers on one 2-core machine then take a core
    each instead of both contending for both.

    Example::

        import_tensorflow(threads=1)  # tf.config.threading.get_intra_op_parallelism_threads() == 1
    """
    if threads is None:
        return
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)


def reach_store(absent: str | None = None, lookup: bool = False) -> None:
    """Check the tracking store before the slow imports: a bad one fails in seconds, and one
    of a scheme the project does not support before MLflow is imported."""
    from classifier.config.uris import check_store_uri
    from classifier.runs.store_paths import missing_local_store, tracking_origin, tracking_uri

    check_store_uri(tracking_uri(), tracking_origin())
    from classifier.runs import tracking

    if not (lookup and missing_local_store()):  # a lookup creates no store
        tracking.configure_tracking(absent=absent)


def check_model(model_spec: str | None) -> None:
    """What can be checked of ``--model`` before TensorFlow loads (seconds): the store that
    an MLflow URI needs exists, or the local path holds a Keras model."""
    from classifier.serving.model_source import (
        local_keras_model,
        names_a_run,
        refuse_missing_store,
    )

    if names_a_run(model_spec):
        reach_store(lookup=True)
        refuse_missing_store(model_spec)  # a lookup in a store that does not exist
    else:
        local_keras_model(model_spec)


def keras_model(model_spec: str | None):
    """The Keras model of ``--model`` (after :func:`check_model`), TensorFlow loaded."""
    import_tensorflow()
    from classifier.serving.registry import load_model

    return load_model(model_spec)

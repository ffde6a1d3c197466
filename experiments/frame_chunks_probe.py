"""What one Python call costs at each depth of the call stack (issue #44: where the test
suite's kernel time goes).

CPython 3.11 keeps its frames in 16 KB chunks per thread and frees a chunk (``munmap``) as soon
as the stack falls back below it, so a call that crosses a chunk's edge maps a new chunk and
unmaps it on return: a few microseconds where a call costs tens of nanoseconds. TensorFlow's
and Keras' tracing runs deep stacks that cross such edges often (``strace -f -e trace=mmap``
of one test process: tens of thousands of 16 KB mappings). This probe times a trivial call at
every depth from 0 to ``--depth`` and prints the median and the slowest depths.

Usage:
    python experiments/frame_chunks_probe.py             # depths 0 to 700, 20,000 calls each
    python experiments/frame_chunks_probe.py --depth 2000
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time


def _nothing() -> None:
    return None


def _at_depth(depth: int, work):
    """``work()`` run ``depth`` frames below this one."""
    if depth == 0:
        return work()
    return _at_depth(depth - 1, work)


def seconds_per_call(depth: int, calls: int) -> float:
    """Seconds per call of a function that does nothing, called ``depth`` frames deep."""

    def loop() -> float:
        started = time.perf_counter()
        for _ in range(calls):
            _nothing()
        return (time.perf_counter() - started) / calls

    return _at_depth(depth, loop)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--depth", type=int, default=700)
    parser.add_argument("--calls", type=int, default=20000)
    args = parser.parse_args()
    costs = {depth: seconds_per_call(depth, args.calls) for depth in range(args.depth + 1)}
    slowest = sorted(costs, key=costs.get, reverse=True)[:5]
    print(f"Python {platform.python_version()}, one call of a function that does nothing:")
    print(
        f"- median over depths 0 to {args.depth}: {statistics.median(costs.values()) * 1e6:.3f} µs"
    )
    for depth in sorted(slowest):
        print(f"- at depth {depth}: {costs[depth] * 1e6:.3f} µs")


if __name__ == "__main__":
    main()

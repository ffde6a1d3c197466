"""What a benchmark's table names the machine by: ``lscpu``'s model name (the CPU behind one
name changes between sessions, so every timing states it).

Example (from a script in ``benchmarks/``, whose folder is on ``sys.path``)::

    from machine import cpu_model
    print(f"{cpu_model()}, {os.cpu_count()} cores")  # "AMD EPYC, 2 cores"
"""

from __future__ import annotations

import platform
import subprocess


def cpu_model() -> str:
    """``lscpu``'s "Model name", or Python's idea of the processor where lscpu is missing."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        return next(
            line.split(":", 1)[1].strip() for line in out.splitlines() if "Model name" in line
        )
    except (OSError, subprocess.CalledProcessError, StopIteration):
        return platform.processor() or "unknown CPU"

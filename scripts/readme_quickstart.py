"""Run the README's Quickstart as written, so that it cannot drift (CI runs this after the tests).

The ```bash block under ``## Quickstart`` runs line by line in one bash shell in the repository
root (``set -e``: the first failing line stops it and is named). ``make ui`` blocks until Ctrl-C,
so here it is started in the background on a free port, the script waits until the MLflow UI
answers at the address it printed, then stops it. Files the block writes in the root
(``review.txt``) are removed afterwards. The runs go to the project's default store, as a
user's would.

Usage:
    .venv/bin/python scripts/readme_quickstart.py            # run it
    .venv/bin/python scripts/readme_quickstart.py --dry-run  # print the lines only
"""

from __future__ import annotations

import argparse
import re
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: ``make ui`` in the block becomes this function: the UI in its own process group on PORT, up
#: to 90 s for it to answer, then the whole group stopped; a warning in its output fails it.
UI = r"""
quickstart_ui() {
  setsid make ui PORT="$PORT" > "$UI_LOG" 2>&1 &
  local pid=$!
  for _ in $(seq 90); do
    if python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/health', timeout=2)" 2>/dev/null; then
      grep -m1 "MLflow UI:" "$UI_LOG"
      kill -- -"$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
      if grep -i "warning" "$UI_LOG" >&2; then echo "make ui printed warnings" >&2; return 1; fi
      return 0
    fi
    sleep 1
  done
  cat "$UI_LOG" >&2; kill -- -"$pid" 2>/dev/null; return 1
}
"""


def quickstart_lines(readme: str) -> list[str]:
    """The command lines of the first ```bash block after ``## Quickstart``.

    Example:
        >>> quickstart_lines("## Quickstart\\n\\ntext\\n```bash\\nmake ui\\n```\\n")
        ['make ui']
    """
    section = re.search(r"^## Quickstart\n(.*?)(?=^## |\Z)", readme, re.M | re.S)
    blocks = re.findall(r"^```bash\n(.*?)^```", section.group(1) if section else "", re.M | re.S)
    if len(blocks) != 1:
        raise ValueError("README.md has no ```bash block under '## Quickstart', or more than one")
    return [line for line in blocks[0].splitlines() if line.strip()]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="print the lines, run nothing")
    args = parser.parse_args()
    lines = quickstart_lines((ROOT / "README.md").read_text())
    if args.dry_run:
        print("\n".join(lines))
        return 0
    before = {path.name for path in ROOT.iterdir()}
    script = ["set -euo pipefail", f"PORT={free_port()}", "UI_LOG=$(mktemp)", UI]
    for line in lines:
        command = "quickstart_ui" if line.strip() == "make ui" else line
        script.append(f"echo {_quoted('quickstart: ' + line)}")
        script.append(command)
    done = subprocess.run(["bash", "-c", "\n".join(script)], cwd=ROOT)
    for name in {path.name for path in ROOT.iterdir()} - before:
        if (ROOT / name).is_file() and not name.startswith("mlflow.db"):
            (ROOT / name).unlink()  # files the block wrote (review.txt); the store stays
    if done.returncode != 0:
        print(
            f"quickstart: failed (exit code {done.returncode}) at the line above", file=sys.stderr
        )
        return 1
    print("quickstart: every line ran")
    return 0


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


if __name__ == "__main__":
    sys.exit(main())

"""``classify sweep SPEC --status``: where every point of a sweep stands, read from its study.

Example (after ``classify sweep configs/sweeps/quick.yaml`` was stopped)::

    print(sweep_status(load_spec("configs/sweeps/quick.yaml")))
    # sweep quick: parent run 3f2a..., storage sqlite:////work/sweeps.db
    # 6 points: 3 waiting, 0 running, 3 finished, 0 failed
    # ...
"""

from __future__ import annotations

from pathlib import Path

from classifier.config.uris import redacted, sweep_storage_url
from classifier.runs.tracking import configure_tracking
from classifier.sweeps import queue
from classifier.sweeps.spec import SweepSpec, expand, search_hash, spec_hash
from classifier.sweeps.storage import default_storage, open_storage


def sweep_status(spec: SweepSpec, storage: str | None = None) -> str:
    """One line for the sweep, one with the counts, one per point (number, name, state,
    worker or best validation accuracy, child run).

    Raises:
        SweepError: a bad or unreachable storage.
    """
    points = expand(spec)
    planned = spec.search.trials if spec.search else len(points)
    digest = search_hash(spec) if spec.search else spec_hash(points)
    url = sweep_storage_url(storage or default_storage(configure_tracking()))
    shown = redacted(url)
    if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).is_file():
        study = None
    else:
        with queue.quiet_storage_errors():
            study = queue.find_study(open_storage(url), f"{spec.name}-{digest}")
    if study is None or not study.user_attrs.get("launched"):
        return (
            f"sweep {spec.name}: not launched in {shown}; start it with: classify sweep "
            f"{spec.path}" + (f" --storage {shown}" if storage else "")
        )
    with queue.quiet_storage_errors():
        states = queue.point_states(study)
        tally = queue.counts(study, planned)
    lines = [
        f"sweep {spec.name}: parent run {study.user_attrs['parent_run_id']}, storage {shown}",
        f"{planned} points: {tally['waiting']} waiting, {tally['running']} running, "
        f"{tally['finished']} finished, {tally['failed']} failed",
    ]
    names = {point.index: point.name for point in points}
    rows = []
    for number in sorted(set(names) | set(states)):
        entry = states.get(number)
        state = entry.state if entry else "waiting"
        detail = ""
        if entry and entry.state == "running":
            detail = f"on {entry.worker}"
        elif entry and entry.value is not None:
            detail = f"best val_accuracy {entry.value:.4f}"
        if entry and entry.attempts > 1:
            detail = (detail + f" ({entry.attempts} attempts)").strip()
        run = f"run {entry.run_id}" if entry and entry.run_id else ""
        rows.append((str(number), names.get(number, f"trial {number}"), state, detail, run))
    widths = [max((len(row[i]) for row in rows), default=0) for i in range(4)]
    for row in rows:
        cells = [
            f"{row[0]:>{widths[0]}}",
            f"{row[1]:<{widths[1]}}",
            f"{row[2]:<{widths[2]}}",
            f"{row[3]:<{widths[3]}}",
            row[4],
        ]
        lines.append("  ".join(cells).rstrip())
    if spec.search and len(states) < planned:
        lines.append(f"{planned - len(states)} trials not drawn yet")
    return "\n".join(lines)

"""Rendering a matplotlib figure to PNG with the Agg canvas (no display, no pyplot state)."""

from __future__ import annotations

from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


def save(figure: Figure, path: str | Path, bbox_inches: str | None = "tight") -> Path:
    """Render ``figure`` with the Agg backend to ``path`` (parents created); return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(figure)
    figure.savefig(path, format="png", dpi=100, bbox_inches=bbox_inches)
    return path

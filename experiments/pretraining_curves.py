"""Redraw ``docs/pretraining-finetuning.png``: validation accuracy per epoch while fine-tuning
the 16-wide ``encoder`` from scratch, from MLM pretraining and from span pretraining.

The figures are the runs' ``val_accuracy`` per epoch (seeds 1 to 3, before refit), as recorded
in README "Self-pretraining: what the MLM encoder buys": the sweeps
6f3d70ba14ce45138fa2dc2a1fbf55d7 (MLM and scratch) and ba9f84747b6e47d9abafdc73f21cfb23 (span),
whose MLflow store stayed on the machine that ran them. The plot is the one every sweep logs
(:func:`classifier.plots.plot_validation_accuracy_by_variant`).

Usage::

    python experiments/pretraining_curves.py docs/pretraining-finetuning.png
"""

from __future__ import annotations

import sys

CURVES = {
    "from scratch": [
        [0.645, 0.846, 0.854, 0.884, 0.886, 0.884, 0.875, 0.869],
        [0.757, 0.800, 0.881, 0.883, 0.878, 0.875, 0.772],
        [0.599, 0.853, 0.871, 0.885, 0.864, 0.878, 0.861],
    ],
    "from MLM pretraining": [
        [0.732, 0.856, 0.813, 0.861, 0.859, 0.855, 0.849],
        [0.760, 0.837, 0.868, 0.854, 0.853, 0.854],
        [0.713, 0.827, 0.829, 0.858, 0.862, 0.855, 0.850, 0.846],
    ],
    "from span pretraining": [
        [0.763, 0.857, 0.868, 0.868, 0.862, 0.856],
        [0.806, 0.832, 0.869, 0.871, 0.858, 0.860, 0.858],
        [0.765, 0.845, 0.859, 0.868, 0.865, 0.859, 0.849],
    ],
}


def main(path: str) -> None:
    from classifier.plots import plot_validation_accuracy_by_variant

    print(plot_validation_accuracy_by_variant(path, CURVES))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "docs/pretraining-finetuning.png")

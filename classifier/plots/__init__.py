"""Every figure, written as PNG files with matplotlib's Agg canvas (no display, no pyplot state).

``attention``: the sinusoidal position table, attention heads, a review shaded by attention.
``runs``: training curves, the confusion matrix, accuracy per variant of a sweep.
``canvas``: a figure rendered to PNG; ``glyphs``: the fonts at hand, and what to draw for a
character none of them has.

Example:
    >>> from classifier import plots
    >>> plots.plot_training_curves(tmp / "curves.png", {"train_loss": [0.6, 0.4]}).name
    'curves.png'
"""

from classifier.plots.attention import (
    COLOUR_MAP,
    LABEL_COLOURS,
    TokenFigure,
    plot_attention_heads,
    plot_positional_encoding,
    plot_token_attention,
    token_colours,
)
from classifier.plots.runs import (
    plot_confusion_matrix,
    plot_optimization_history,
    plot_param_importances,
    plot_reliability_diagram,
    plot_test_accuracy_by_variant,
    plot_training_curves,
    plot_validation_accuracy_by_variant,
)

__all__ = [
    "COLOUR_MAP",
    "LABEL_COLOURS",
    "plot_attention_heads",
    "plot_confusion_matrix",
    "plot_optimization_history",
    "plot_param_importances",
    "plot_positional_encoding",
    "plot_reliability_diagram",
    "plot_test_accuracy_by_variant",
    "plot_token_attention",
    "TokenFigure",
    "plot_training_curves",
    "plot_validation_accuracy_by_variant",
    "token_colours",
]

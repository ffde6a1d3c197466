"""Errors meant for the user: each becomes one line on stderr, never a traceback.

Every such error derives from :class:`UserError`; the ``classify`` command catches that one
class, prints ``classify: error: <message>`` and exits with :attr:`UserError.exit_code`. Anything
else is a bug and keeps its traceback. This module imports nothing heavy (no TensorFlow), so
any module can raise these before the slow imports.

Example:
    >>> issubclass(ConfigError, UserError) and issubclass(ConfigError, ValueError)
    True
    >>> str(ConfigError("model.num_heads must be positive, got 0"))
    'model.num_heads must be positive, got 0'
"""

from __future__ import annotations

import math


class UserError(Exception):
    """A problem with what the user gave (a config, a file, a run id, a URI) that they can fix.

    The message is one line that names the input.
    """

    exit_code = 2


class ConfigError(UserError, ValueError):
    """A configuration key, type or value is wrong; the message names the key and the value."""


class DataNotFoundError(UserError, RuntimeError):
    """The IMDB data is neither in the data directory nor downloadable."""


class DataError(UserError, ValueError):
    """A labelled file or folder cannot be used as it is: missing, malformed, not UTF-8, a
    column or class that is not there; the message names the file (and the line or row)."""


class ResumeError(UserError, ValueError):
    """The run to resume does not exist, is finished, or has no config."""


class TrainingDiverged(UserError):
    """The loss became NaN or infinite; the run is FAILED and nothing is registered."""

    @classmethod
    def check(
        cls,
        metrics: dict[str, float],
        epoch: int,
        phase: str = "training",
        learning_rate_key: str = "train.learning_rate",
    ) -> None:
        """Raise one for an epoch whose metrics hold a NaN or an infinity; the message names
        the config key of the learning rate to lower.

        Example:
            >>> TrainingDiverged.check({"train_loss": 0.3}, epoch=1)  # finite: nothing happens
        """
        bad = ", ".join(f"{k} {v}" for k, v in metrics.items() if not math.isfinite(v))
        if bad:
            raise cls(
                f"{phase} diverged at epoch {epoch}: {bad}; the run is marked FAILED and "
                f"nothing is registered (try a lower {learning_rate_key})"
            )


class RunBusy(ResumeError):
    """The run to resume is being trained (or resumed) by another live process."""


class TrackingError(UserError):
    """The tracking store cannot be reached, opened or created; the message names its URI."""


class ModelError(UserError):
    """No model was found, or what was given is not an end-to-end review classifier."""


class SweepError(UserError, ValueError):
    """A sweep or experiment to compare does not exist or holds no finished runs."""


class InputError(UserError, ValueError):
    """A text sent to a served model is not one it classifies: not a string, empty, or longer
    than the model reads; the message names the row."""


class ExplainError(UserError):
    """The model has no attention layer to explain, or the review has no words."""


def first_line(error: BaseException) -> str:
    """The gist of an error on one line: its first line (and the next when it ends in ':').

    Example:
        >>> first_line(OSError("cannot open:\\n  /tmp/x: permission denied\\n  more"))
        'cannot open: /tmp/x: permission denied'
    """
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    if not lines:
        return type(error).__name__
    line = " ".join(lines[:2]) if lines[0].endswith(":") and len(lines) > 1 else lines[0]
    return line if len(line) <= 300 else line[:297] + "..."

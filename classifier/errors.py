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


class UserError(Exception):
    """A problem with what the user gave (a config, a file, a run id, a URI) that they can fix.

    The message is one line that names the input.
    """

    exit_code = 2


class ConfigError(UserError, ValueError):
    """A configuration key, type or value is wrong; the message names the key and the value."""


class DataNotFoundError(UserError, RuntimeError):
    """The IMDB data is neither in the data directory nor downloadable."""


class ResumeError(UserError, ValueError):
    """The run to resume does not exist, is finished, or has no config."""


class ModelError(UserError):
    """No model was found, or what was given is not an end-to-end review classifier."""


class SweepError(UserError, ValueError):
    """A sweep or experiment to compare does not exist or holds no finished runs."""


class ExplainError(UserError):
    """The model has no attention layer to explain, or the review has no words."""

"""Where the pyfunc model class lived before the package had folders: models registered then
pickled it as ``classifier.pyfunc.SentimentModel``, and MLflow unpickles them by that name.

It is :class:`classifier.serving.pyfunc.SentimentModel`; new models name that module.
"""

from classifier.serving.pyfunc import SentimentModel

__all__ = ["SentimentModel"]

"""imdb-classifier: Transformer sentiment classifiers for IMDB movie reviews.

The folders are the architecture, bottom to top (imports flow downwards only;
``tests/test_architecture.py`` checks it): ``errors`` and ``config``; ``evaluation``; ``data``
and ``layers``; ``models``; ``plots``; ``runs`` (MLflow and the run lifecycle); ``serving``;
``pretraining``; ``training``; ``explain`` and ``sweeps``; ``cli`` (the ``classify`` command).
"""

__version__ = "0.1.0"

"""imdb-classifier: Transformer sentiment classifiers for IMDB movie reviews.

Layout: ``layers/`` (building blocks), ``models/`` (classifiers, Transformer), ``data``, ``config``,
``train``/``tracking`` (MLflow), ``cli`` (the ``classify`` command).
"""

__version__ = "0.1.0"

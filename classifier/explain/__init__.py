"""What a prediction rested on: attention weights, or each word's contribution for ``bow``
(``explanation``), and its caption, PNG and HTML page (``views``).

It may import errors, config, evaluation, data, layers, models, plots, runs and serving.
"""

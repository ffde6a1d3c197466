"""What a prediction rested on (``explanation``): each word's push towards a class, as exact
contributions (bags of n-grams) or occlusion, and the attention it receives (``measures``), and
its caption, PNG and HTML page (``views``).

It may import errors, config, evaluation, data, layers, models, plots, runs and serving.
"""

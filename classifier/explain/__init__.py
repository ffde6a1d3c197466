"""What a prediction rested on (``explanation``): each word's push towards a class, as exact
contributions (bags of n-grams) or occlusion, and the attention it receives (``measures``, in
NumPy), read from a LiteRT bundle without TensorFlow (``bundle_view``) or from a Keras model
(``keras_view``), and its caption, PNG and HTML page (``views``). ``explanation``, ``measures``,
``bundle_view`` and ``views`` import no TensorFlow.

It may import errors, config, evaluation, data, layers, models, plots, runs and serving.
"""

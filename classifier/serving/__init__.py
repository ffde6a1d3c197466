"""Serving a trained model: reading reviews within bounded memory (``reviews``), classifying and
formatting them (``predict``), when a review is ``unknown`` (``evidence``), length-sorted batches and concurrent requests predicted together
(``batching``), the LiteRT engine that needs no TensorFlow (``litert_engine``, its interpreters
in ``interpreters``) and the Keras one (``keras_engine``), the bundle written at
training (``bundle``) and what it holds for ``classify explain`` (``explain_parts``), finding a
run's bundle without MLflow (``model_source``), the MLflow registry (``registry``) and which version a ``--model`` names (``versions``), the pyfunc model
MLflow serves (``pyfunc``), and a model's metrics on a user's labelled file (``evaluation``).

It may import errors, config, evaluation, data, layers, models, plots and runs. ``predict``,
``reviews``, ``batching``, ``interpreters``, ``litert_engine``, ``explain_parts``, ``versions`` and ``evaluation`` import no
TensorFlow.
"""

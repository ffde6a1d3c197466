"""Serving a trained model: reading reviews within bounded memory (``reviews``), classifying and
formatting them (``predict``), length-sorted batches (``batching``), the LiteRT engine that needs
no TensorFlow (``litert_engine``) and the Keras one (``keras_engine``), the bundle written at
training (``bundle``), finding a run's bundle without MLflow (``model_source``), the MLflow
registry (``registry``) and the pyfunc model MLflow serves (``pyfunc``).

It may import errors, config, evaluation, data, layers, models, plots and runs. ``predict``,
``reviews`` and ``litert_engine`` import no TensorFlow.
"""

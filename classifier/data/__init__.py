"""The reviews: finding and loading the prepared TFDS copy (``source``), the train/validation/test
splits, the vectorizer and the tf.data pipelines (``pipeline``), and the plain-Python tokenizer
that serving uses without TensorFlow (``tokenizer``).

It may import :mod:`classifier.errors` and :mod:`classifier.config`.
"""

"""The texts: finding and loading the prepared TFDS copy of IMDB (``source``), a user's labelled
files and class folders read streamed without TensorFlow (``files``), a TFDS data set by name
read as such a source (``named``), the sentiment treebank's trees as sentences or phrases
(``treebank``), all planned into splits with their class names (``labelled``), labels mapped
as read (``relabel``), with a note for labels that differ only in case (``label_case``); the
train/validation/test splits of either, the vectorizer and the tf.data pipelines
(``pipeline``) and their batches (``batching``); and the plain-Python tokenizer that serving
uses without TensorFlow (``tokenizer``).

It may import :mod:`classifier.errors` and :mod:`classifier.config`.
"""

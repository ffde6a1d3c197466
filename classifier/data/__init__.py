"""The texts. The embedded default, IMDB: its prepared TFDS copy found, checked and read
(``imdb``). A user's labelled texts: what every kind of source is (``sources``), one module a
kind: table files (``tables``), class folders (``folders``), a TFDS data set by name
(``named``), the sentiment treebank's trees as sentences or phrases (``treebank``); above
them, once for all, the checked rows and the one counting pass (``files``), the splits and
class names (``labelled``), labels mapped as read (``relabel``), more labelled texts for
training only (``extra``) and a note for labels that differ only in case (``label_case``).
Either becomes train/validation/test splits and tf.data pipelines in ``pipeline``, batched by
``batching``. Text becomes token ids through the vectorizer (``vectorizer``, TensorFlow) or the
plain-Python tokenizer that serving uses without TensorFlow (``tokenizer``), the same ids; both
read a short input's misspelt words as known ones by one rule (``spelling``).

It may import :mod:`classifier.errors` and :mod:`classifier.config`.
"""

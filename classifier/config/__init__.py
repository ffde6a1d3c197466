"""The typed, validated configuration: dataclasses for every section (``schema``), reading YAML
files with ``extends:`` (``yaml_files``), the config hash that recognises a run again
(``hashing``), the ``pretrain`` section (``pretrain``), checks of the data source keys and model
names (``checks``), the words that open and close a negation's scope and their ids
(``negation``), the one parser of the model and store URIs a user gives (``uris``) and the
variant registry (``variants``: one entry per ``model.variant``, builders named by string so
that no Keras is imported).

It imports only :mod:`classifier.errors`, and never TensorFlow, Keras or MLflow: a bad config is
reported before the slow imports.
"""

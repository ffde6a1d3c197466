"""Comparing variants: sweep specs and their points (``spec``; their values checked and
written back by ``spec_values``), running them as child runs of
one MLflow parent run (``run``, a point in ``points``), handed out to workers by an Optuna study
(``queue``) in its storage (``storage``: SQLite, or a PostgreSQL server that may go away and come
back), what ``--dry-run`` and ``--status`` print (``listing``, ``status``), what a finished sweep
logs on its parent run (``summary``), and the comparison table of finished runs (``compare``,
formatted by ``table``).

It may import every package below it, training included.
"""

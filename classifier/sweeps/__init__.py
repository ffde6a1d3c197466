"""Comparing variants: sweep specs and their points (``spec``), running them as child runs of
one MLflow parent run (``run``), and the comparison table of finished runs (``compare``).

It may import every package below it, training included.
"""

"""``python -m classifier`` runs the ``classify`` command line."""

from classifier.cli import main

main()

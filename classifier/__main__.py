"""``python -m classifier`` runs the ``classify`` command line."""

from classifier.cli.main import main

main()

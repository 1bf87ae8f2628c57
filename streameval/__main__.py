"""``python -m streameval``: the command-line interface."""

from .cli.main import main

main()

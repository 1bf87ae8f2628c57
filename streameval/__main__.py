"""``python -m streameval``: the command-line interface."""

from .cli import main

main()

"""The ``streameval`` command: :mod:`.main` (eval, merge, report, compare, demo, generate),
:mod:`.monitor` (the ``monitor`` group) and :mod:`.options` (option parsing they share).

The entry point is :func:`streameval.cli.main.main`; each command imports the library lazily so
``--help`` stays fast.
"""

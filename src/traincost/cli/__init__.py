"""The ``traincost`` command line: one module per study or concern, each adding its subcommands.

:mod:`~traincost.cli.run` builds the parser and runs a subcommand (:func:`main`, the console script);
:mod:`~traincost.cli.arguments` holds the argument types and the arguments several modules share; the
others (``frontend``, ``memory``, ``sweep``, ``fusion``, ``checkpoint``, ``cost``, ``mtrain``, ``tiered``,
``hardware``, ``summary``, ``ablations``) each add their subcommands with one ``*_commands`` function.
"""

from traincost.cli.run import main

__all__ = ["main"]

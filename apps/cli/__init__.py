"""The `specdraft` command line: one module a command, the parser and dispatch in ``entry_point``.

``main`` (the console script ``specdraft``) and ``build_parser`` are importable from here;
``python -m specdraft.apps.cli`` runs ``main``. The command line may use the service (``serve``) and
the benchmark runner (``bench``); neither of them imports the command line.
"""

from .entry_point import HANDLERS, build_parser, main

__all__ = ["HANDLERS", "build_parser", "main"]

"""One-off measurement scripts (not part of the installed package): each ``python benchmarks/<name>.py
--help`` runs from the repository root, writes its results through ``specdraft.apps.bench.result_files``
(JSON, a Markdown table and a plot), and is tested under ``tests/benchmarks``. Modules that import
another one of this folder do so as ``benchmarks.<name>`` and put the repository root on ``sys.path``
when run as a script; the tests find it through ``tests/conftest.py``."""

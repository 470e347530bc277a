"""The names of the benchmark's prompt sets, importable without torch (the command line builds its
parser from them on machines, such as an edge laptop, that run llama-cpp-python and numpy alone)."""

from __future__ import annotations

RETRIEVAL_SETS = ("chat-multiturn", "rag")  # built by rag_suites
OWN_RUNNERS = (
    "edge",
    "iterative-rag",
    "structured",
)  # benchmarks with their own runner and report (edge_bench, iterative_bench, structured_bench)


def names() -> list[str]:
    """Every prompt-set name `specdraft bench` accepts, in the order its --help lists them."""
    from .datasets import PROMPT_SETS
    from .datasets.grammar_data import GRAMMAR_SETS

    return sorted(PROMPT_SETS) + sorted(GRAMMAR_SETS) + list(RETRIEVAL_SETS)

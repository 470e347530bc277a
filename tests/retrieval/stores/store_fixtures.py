"""Shared by the vector store tests: the four stores on disk in temporary folders, documents whose
search results have ties (broken by the lower row), and the helpers of the iterative RAG tests."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from specdraft.retrieval import IndexConfig
from specdraft.retrieval.stores import STORES, StoreConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "iterative"))  # iterative_fixtures

from iterative_fixtures import QUESTION, salad_collection, same_answer  # noqa: E402

__all__ = [
    "STORES",
    "QUESTION",
    "CHUNKING",
    "documents",
    "store_config",
    "failing_half_way",
    "salad_collection",
    "same_answer",
]

CHUNKING = IndexConfig(chunk_words=12, chunk_overlap=2)  # several chunks per document
WORDS = "apple banana cherry dog eagle fox goat house ice jungle kite lemon moon night ocean pear queen river".split()
QUERIES = ["apple dog", "fox goat house", "moon river night pear", "lemon", "queen of the ocean kite"]


def documents(n: int = 40, seed: int = 0) -> list[dict]:
    """``n`` documents of 5-30 words drawn from a small vocabulary (so scores tie often), with metadata."""
    rng = np.random.default_rng(seed)
    return [
        {"id": f"d{i}", "text": " ".join(rng.choice(WORDS, size=int(rng.integers(5, 30)))), "metadata": {"n": i}}
        for i in range(n)
    ]


def store_config(store: str, folder: Path, collection: str = "docs", **fields) -> StoreConfig:
    """``store`` on disk in ``folder`` (Milvus Lite: a database file in it)."""
    path = folder / "milvus.db" if store == "milvus" else folder
    return StoreConfig(store, path=str(path), collection=collection, **fields)


def failing_half_way(make_backend):
    """``make_backend`` (a store module's ``create_backend`` or ``open_backend``) whose backends write
    the first two records of a write and then fail with ``OSError("disk full")``."""

    def make(*args):
        backend = make_backend(*args)
        write = backend.write

        def half_then_fail(keys, chunks, vectors):
            write(keys[:2], chunks[:2], vectors[:2])
            raise OSError("disk full")

        backend.write = half_then_fail
        return backend

    return make

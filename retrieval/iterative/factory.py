"""``make_retriever(kind, collection, embedder=None, vectors=None)``: one of the three retrievers by name."""

from __future__ import annotations

import numpy as np

from ..embedder import TextEmbedder
from ..retriever import Collection, PreparedRetriever
from .bm25 import BM25Config, BM25Retriever
from .dense import DenseConfig, DenseFlatRetriever, DenseHNSWConfig, DenseHNSWRetriever

__all__ = ["RETRIEVER_KINDS", "make_retriever"]

RETRIEVER_KINDS = ("dense", "hnsw", "bm25")


def make_retriever(
    kind: str,
    collection: Collection,
    embedder: TextEmbedder | None = None,
    vectors: np.ndarray | None = None,
    *,
    dense: DenseConfig = DenseConfig(),
    hnsw: DenseHNSWConfig = DenseHNSWConfig(),
    bm25: BM25Config = BM25Config(),
) -> PreparedRetriever:
    """ "dense" (exact FAISS flat), "hnsw" (FAISS HNSW) or "bm25" (bm25s) over ``collection``.
    The dense kinds need ``embedder`` (``vectors``: the documents' precomputed unit vectors, else
    they are embedded now). ValueError for another kind or a dense kind without an embedder."""
    if kind not in RETRIEVER_KINDS:
        raise ValueError(f"unknown retriever {kind!r}: choose one of {', '.join(RETRIEVER_KINDS)}")
    if kind == "bm25":
        return BM25Retriever(collection, bm25)
    if embedder is None:
        raise ValueError(f"the {kind} retriever needs an embedder")
    if kind == "dense":
        return DenseFlatRetriever(collection, embedder, vectors, dense)
    return DenseHNSWRetriever(collection, embedder, vectors, hnsw)

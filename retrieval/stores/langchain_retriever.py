"""``LangChainRetriever``: any LangChain ``BaseRetriever`` (the ``langchain`` extra) as a ``Retriever``.

LangChain wraps most vector stores (pgvector, Pinecone, Weaviate, Elasticsearch, FAISS, ...) and
other retrievers (BM25, multi-query, ensembles) behind ``BaseRetriever``; this adapter lets the RAG
pipeline and its drafters read any of them: ``search(queries, k)`` runs the retriever's ``batch``
(one call for the batch) and keeps each query's first ``k`` documents, in the retriever's order.

- A hit's chunk: ``Document.page_content`` is its text; its chunk id is the document's ``id``, else
  its metadata's ``"chunk_id"`` or ``"id"``, else ``"langchain-<row>"``; its document id the metadata's
  ``"doc_id"`` or ``"source"``, else the chunk id; its metadata the document's.
- A hit's row: documents are numbered in the order this adapter first sees them (the same id and
  text: the same row), and ``collection()`` holds those seen so far.
- A hit's score: LangChain retrievers return no scores, so it is ``1 / (1 + rank)`` (higher is
  closer, as everywhere in specdraft), or the metadata's ``"score"`` when the retriever puts one there.

Not a ``ScoringRetriever``: a LangChain retriever cannot score a chosen document, so iterative RAG
with speculative retrieval needs one of the store adapters (``StoreRetriever``) over the same store.
"""

from __future__ import annotations

import threading
from typing import Any, Sequence

from ..chunker import Chunk
from ..retriever import Collection, Hit, check_search
from .base import import_client

__all__ = ["LangChainRetriever"]


class LangChainRetriever:
    """``retriever`` (a ``langchain_core.retrievers.BaseRetriever``) as a ``Retriever`` (module
    docstring). TypeError for anything else; ``StoreNotInstalledError`` without langchain-core."""

    def __init__(self, retriever: Any, name: str = "langchain") -> None:
        retrievers = import_client("langchain_core.retrievers", "langchain")
        if not isinstance(retriever, retrievers.BaseRetriever):
            raise TypeError(f"expected a LangChain BaseRetriever, got {type(retriever).__name__}")
        self.retriever = retriever
        self._name = name
        self._rows: dict[tuple[str | None, str], int] = {}
        self._chunks: list[Chunk] = []
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._name

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        """Each query's first ``k`` documents from the LangChain retriever, in its order."""
        queries = check_search(queries, k)
        if not queries:
            return []
        answers = self.retriever.batch(queries)
        return [[self._hit(document, rank) for rank, document in enumerate(list(found)[:k])] for found in answers]

    def collection(self) -> Collection:
        """The documents seen so far (row ``i`` = the ``i``-th first seen); ValueError before any."""
        with self._lock:
            if not self._chunks:
                raise ValueError("the LangChain retriever has returned no documents yet")
            return Collection.from_chunks(list(self._chunks))

    def _hit(self, document: Any, rank: int) -> Hit:
        metadata = dict(document.metadata or {})
        given_id = getattr(document, "id", None) or metadata.get("chunk_id") or metadata.get("id")
        given_id = str(given_id) if given_id is not None else None
        key = (given_id, document.page_content)
        with self._lock:
            row = self._rows.get(key)
            if row is None:
                row = len(self._chunks)
                chunk_id = given_id or f"langchain-{row}"
                doc_id = str(metadata.get("doc_id") or metadata.get("source") or chunk_id)
                self._chunks.append(Chunk(chunk_id, doc_id, document.page_content, metadata))
                self._rows[key] = row
            chunk = self._chunks[row]
        score = metadata.get("score")
        score = float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else 1.0 / (1 + rank)
        return Hit(row, chunk, score)

"""The retriever contract of specdraft: one hit type and one protocol for every retrieval.

Both the RAG pipeline (``retrieval.pipeline``: retrieve once, then generate) and iterative RAG
(``retrieval.iterative``: retrieve every few tokens, speculatively) search through this contract,
and every retriever implements it: the persisted ``DocumentIndex`` and the iterative retrievers
(exact dense, HNSW, BM25) over a ``Collection``.

Words used here:

- **collection** (``Collection``): the documents searched, named by their **row** (position);
  ``texts[i]`` is row ``i``'s text, ``ids[i]`` its stable id, ``chunk(i)`` the ``Chunk`` (a
  ``DocumentIndex``'s collection holds its chunks; one built from texts treats each text as a
  one-chunk document whose id is its own).
- **hit** (``Hit``): one search result, ``Hit(doc, chunk, score)``: the row, its chunk, and the
  retriever's score (higher is closer).

Protocols (all ``runtime_checkable``; a capability is declared, never probed with ``getattr``):

- ``Retriever``: ``name``; ``search(queries, k)`` answers many queries in ONE call, each with its
  best ``k`` hits, best first. What the RAG pipeline needs.
- ``ScoringRetriever(Retriever)``: also ``score(query, docs)``, the scores ``search`` ranks ``docs``
  by. What iterative RAG needs: its speculative cache ranks the documents it holds with it, so a
  cache that holds the true top document guesses it. Its ``search`` is **canonical**: ranked by
  (score descending, row ascending), with ``score``'s function, and a query's answer depends on
  nothing but the query (not on ``k`` up to the retriever's candidate count, nor on the other
  queries of the batch), so plain and speculative iterative RAG see the same documents.
- ``PreparedRetriever(ScoringRetriever)``: also ``prepare(queries)`` (a query's expensive first
  step, e.g. its embedding) and ``search_prepared`` / ``score_prepared`` taking those forms, so an
  answer prepares each query once (``iterative.query_memo.QueryMemo`` checks for it with
  ``isinstance``).

``rank`` implements the canonical order, ``dot64`` the dense retrievers' scores; ``check_search`` /
``check_docs`` the argument checks; ``RetrieverError`` names a retriever that failed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, Sequence, runtime_checkable

import numpy as np

from .chunker import Chunk

__all__ = [
    "Collection",
    "Hit",
    "Retriever",
    "ScoringRetriever",
    "PreparedRetriever",
    "RetrieverError",
    "rank",
    "dot64",
    "check_search",
    "check_docs",
]


@dataclass(frozen=True)
class Collection:
    """The documents retrieved from: ``texts[i]`` is row ``i``, ``ids[i]`` its stable id.
    ``chunks``: row ``i``'s ``Chunk`` (``from_chunks``); empty: each text is a one-chunk document
    whose chunk id and document id are its id."""

    texts: Sequence[str]
    ids: Sequence[str]
    chunks: Sequence[Chunk] = ()

    def __post_init__(self) -> None:
        if len(self.texts) != len(self.ids):
            raise ValueError(f"a collection needs one id per text: {len(self.texts)} texts, {len(self.ids)} ids")
        if len(self.texts) == 0:
            raise ValueError("a collection needs at least one document")
        if len(self.chunks) not in (0, len(self.texts)):
            raise ValueError(
                f"a collection needs one chunk per text or none: {len(self.texts)} texts, {len(self.chunks)} chunks"
            )

    @classmethod
    def from_texts(cls, texts: Sequence[str]) -> "Collection":
        """A collection whose ids are the row numbers as strings."""
        return cls(list(texts), [str(i) for i in range(len(texts))])

    @classmethod
    def from_chunks(cls, chunks: Sequence[Chunk]) -> "Collection":
        """A collection of ``chunks`` (row ``i`` = ``chunks[i]``; ids are the chunk ids)."""
        chunks = list(chunks)
        return cls([chunk.text for chunk in chunks], [chunk.id for chunk in chunks], chunks)

    def __len__(self) -> int:
        return len(self.texts)

    def chunk(self, row: int) -> Chunk:
        """Row ``row``'s chunk (see the class docstring)."""
        if self.chunks:
            return self.chunks[row]
        return Chunk(self.ids[row], self.ids[row], self.texts[row])

    def hits(self, ranked: Sequence[tuple[int, float]]) -> list["Hit"]:
        """``(row, score)`` pairs (``rank``'s answer) as hits, in the same order."""
        return [Hit(row, self.chunk(row), score) for row, score in ranked]


@dataclass(frozen=True)
class Hit:
    """One search result: ``doc`` the row in the collection searched, ``chunk`` that row's chunk,
    ``score`` the retriever's score (higher is closer; dense: cosine similarity)."""

    doc: int
    chunk: Chunk
    score: float


@runtime_checkable
class Retriever(Protocol):
    """Searches a collection (module docstring)."""

    @property
    def name(self) -> str:
        """What error messages and reports call this retriever ("dense", "bm25", ...)."""
        ...

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        """For each query its best ``k`` hits (fewer when the collection is smaller), best first."""
        ...


@runtime_checkable
class ScoringRetriever(Retriever, Protocol):
    """A ``Retriever`` that scores chosen documents and searches canonically (module docstring)."""

    def score(self, query: str, docs: Sequence[int]) -> np.ndarray:
        """float64 ``[len(docs)]``: the scores ``search`` ranks ``docs`` (rows) by for ``query``."""
        ...


@runtime_checkable
class PreparedRetriever(ScoringRetriever, Protocol):
    """A ``ScoringRetriever`` whose queries can be prepared once and reused (module docstring)."""

    def prepare(self, queries: Sequence[str]) -> list[Any]:
        """Each query's prepared form, independent of the other queries."""
        ...

    def search_prepared(self, prepared: Sequence[Any], k: int) -> list[list[Hit]]:
        """``search`` of the queries ``prepared`` came from."""
        ...

    def score_prepared(self, prepared: Any, docs: Sequence[int]) -> np.ndarray:
        """``score`` of the query ``prepared`` came from."""
        ...


class RetrieverError(RuntimeError):
    """A retriever failed (raised, timed out); the message names it."""

    def __init__(self, retriever: str, cause: BaseException | str) -> None:
        detail = cause if isinstance(cause, str) else f"{type(cause).__name__}: {cause}"
        super().__init__(f"retriever {retriever!r} failed: {detail}")
        self.retriever = retriever


def rank(docs: np.ndarray, scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The best ``k`` of ``docs`` as ``(row, score)`` pairs, by (score descending, row ascending)."""
    docs = np.asarray(docs, dtype=np.int64)
    scores = np.asarray(scores, dtype=np.float64)
    order = np.lexsort((docs, -scores))[:k]
    return [(int(docs[i]), float(scores[i])) for i in order]


def dot64(rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """float64 inner products of each of ``rows`` (``[n, dim]``) with ``query`` (``[dim]``), row by
    row: a row's value does not depend on the other rows scored with it (the dense retrievers' and
    the vector stores' ``score``)."""
    return (np.asarray(rows).astype(np.float64) * np.asarray(query).astype(np.float64)).sum(axis=1)


def check_search(queries: Sequence[str], k: int) -> list[str]:
    """``queries`` as a list; ValueError for a non-string query or ``k`` < 1."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    queries = list(queries)
    for query in queries:
        if not isinstance(query, str):
            raise ValueError(f"queries must be strings, got {type(query).__name__}")
    return queries


def check_docs(docs: Sequence[int], size: int) -> np.ndarray:
    """``docs`` as an int64 array; ValueError for a row outside ``[0, size)``."""
    rows = np.asarray(list(docs), dtype=np.int64)
    if rows.size and (rows.min() < 0 or rows.max() >= size):
        raise ValueError(f"document rows must lie in [0, {size}), got {rows.min()}..{rows.max()}")
    return rows

"""The retriever contract of iterative RAG: a document collection, scored documents, canonical ranking.

- ``Collection``: the documents (``texts``) and their ids (``ids``); a document is named by its row.
- ``Retriever`` protocol: ``name``; ``search(queries, k)`` answers many queries in ONE call (the
  speculative pipeline's batched verification) with each query's best ``k`` documents;
  ``score(query, docs)`` scores chosen documents with the very function ``search`` ranks by (the
  speculative cache ranks its documents with it, so a cache that holds the true top document
  guesses it).
- Determinism: ``search`` is **canonical**. Results are ranked by (score descending, document row
  ascending), with scores from ``score``'s function, and a query's answer depends on nothing but
  the query: not on ``k`` (as long as ``k`` is at most the retriever's candidate count), nor on the
  other queries in the batch. Plain and speculative iterative RAG then see the same documents.

``rank`` implements the ordering; ``RetrieverError`` names the retriever that failed.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable, Protocol, Sequence, TypeVar, runtime_checkable

import numpy as np

__all__ = ["Collection", "ScoredDoc", "Retriever", "RetrieverError", "call_with_timeout", "rank", "check_search", "check_docs"]

T = TypeVar("T")


@dataclass(frozen=True)
class Collection:
    """The documents retrieved from: ``texts[i]`` is document ``i``, ``ids[i]`` its stable id."""

    texts: Sequence[str]
    ids: Sequence[str]

    def __post_init__(self) -> None:
        if len(self.texts) != len(self.ids):
            raise ValueError(f"a collection needs one id per text: {len(self.texts)} texts, {len(self.ids)} ids")
        if len(self.texts) == 0:
            raise ValueError("a collection needs at least one document")

    @classmethod
    def from_texts(cls, texts: Sequence[str]) -> "Collection":
        """A collection whose ids are the row numbers as strings."""
        return cls(list(texts), [str(i) for i in range(len(texts))])

    def __len__(self) -> int:
        return len(self.texts)


@dataclass(frozen=True)
class ScoredDoc:
    """One search result: ``doc`` is the row in the collection, ``score`` the retriever's score."""

    doc: int
    score: float


@runtime_checkable
class Retriever(Protocol):
    name: str

    def search(self, queries: Sequence[str], k: int) -> list[list[ScoredDoc]]:
        """For each query its best ``k`` documents (fewer when the collection is smaller), best first."""
        ...

    def score(self, query: str, docs: Sequence[int]) -> np.ndarray:
        """float64 ``[len(docs)]``: the scores ``search`` ranks ``docs`` by for ``query``."""
        ...


class RetrieverError(RuntimeError):
    """A retriever failed (raised, timed out); the message names it."""

    def __init__(self, retriever: str, cause: BaseException | str) -> None:
        detail = cause if isinstance(cause, str) else f"{type(cause).__name__}: {cause}"
        super().__init__(f"retriever {retriever!r} failed: {detail}")
        self.retriever = retriever


def call_with_timeout(call: Callable[[], T], timeout: float | None, retriever: str) -> T:
    """``call()``'s result; with ``timeout``, a ``RetrieverError`` naming ``retriever`` when it takes
    longer (the call goes on in a daemon thread and its result is dropped). Its own exception is
    re-raised as it is."""
    if timeout is None:
        return call()
    outcome: list = []

    def run() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as error:  # handed to the waiting thread
            outcome.append((False, error))

    worker = threading.Thread(target=run, name=f"retriever-{retriever}", daemon=True)
    worker.start()
    worker.join(timeout)
    if not outcome:
        raise RetrieverError(retriever, f"did not answer within {timeout:g} s")
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


def rank(docs: np.ndarray, scores: np.ndarray, k: int) -> list[ScoredDoc]:
    """The best ``k`` of ``docs`` by (score descending, row ascending)."""
    docs = np.asarray(docs, dtype=np.int64)
    scores = np.asarray(scores, dtype=np.float64)
    order = np.lexsort((docs, -scores))[:k]
    return [ScoredDoc(int(docs[i]), float(scores[i])) for i in order]


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

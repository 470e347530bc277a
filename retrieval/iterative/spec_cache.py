"""The per-request speculative cache of RaLMSpec: documents the retriever returned for this answer.

``add`` puts documents in (each verified query's top ``prefetch_k``: the cache update and the
prefetch); ``guess(query)`` ranks the cached documents with the retriever's own ``score`` and the
canonical order (``retriever.rank``) and returns the best ``n``. With the same scoring function,
a cache that holds the retriever's true top documents guesses them (for an exact retriever).
"""

from __future__ import annotations

import time
from typing import Iterable

import numpy as np

from ..retriever import RetrieverError, ScoringRetriever, rank

__all__ = ["SpeculativeCache"]


class SpeculativeCache:
    def __init__(self, retriever: ScoringRetriever) -> None:
        self.retriever = retriever
        self._docs: list[int] = []
        self._seen: set[int] = set()
        self.seconds = 0.0

    def __len__(self) -> int:
        return len(self._docs)

    @property
    def docs(self) -> list[int]:
        return list(self._docs)

    def add(self, docs: Iterable[int]) -> None:
        for doc in docs:
            if doc not in self._seen:
                self._seen.add(doc)
                self._docs.append(int(doc))

    def guess(self, query: str, n: int) -> tuple[tuple[int, ...], float]:
        """The best ``n`` cached documents for ``query`` and the seconds the scoring took."""
        start = time.perf_counter()
        if not self._docs:
            return (), 0.0
        try:
            scores = np.asarray(self.retriever.score(query, self._docs), dtype=np.float64)
        except Exception as error:
            raise RetrieverError(self.retriever.name, error) from error
        if scores.shape != (len(self._docs),):
            raise RetrieverError(
                self.retriever.name, f"score gave shape {scores.shape} for {len(self._docs)} documents"
            )
        best = tuple(doc for doc, _ in rank(np.array(self._docs), scores, n))
        seconds = time.perf_counter() - start
        self.seconds += seconds
        return best, seconds

"""Prepare each query once per answer: the speculative cache's scoring and the verification share it.

Speculative retrieval asks the retriever about a query twice: the per-request cache scores its
documents for it (``score``), and the batched verification searches it (``search``). For a dense
retriever both start by embedding the query, by far the larger part of a search's cost on a CPU.
A retriever that can split that step off implements ``retrieval.retriever.PreparedRetriever``:

- ``prepare(queries) -> list``: each query's prepared form (dense: its unit vector, embedded on its
  own so it does not depend on the batch; BM25: its word ids);
- ``search_prepared(prepared, k)`` / ``score_prepared(prepared_one, docs)``: exactly what
  ``search`` / ``score`` answer for those queries (they are ``prepare`` followed by these).

``QueryMemo(retriever)`` is the answer's view of the retriever (it is a ``ScoringRetriever``): it
prepares each distinct query text once, the first time it is scored or searched, keeps the prepared
form for the rest of the answer, and hands it to ``score_prepared`` / ``search_prepared``. So the
results are the retriever's own, and a verification costs only the search itself (for dense, the
FAISS search). A retriever that is not a ``PreparedRetriever`` is called as it is. One memo serves
one answer; it is safe to use from the answering thread and the verification worker at once (a
query prepared by both at the same moment is kept once; both forms are equal).
"""

from __future__ import annotations

import threading
from typing import Any, Sequence

import numpy as np

from ..retriever import Hit, PreparedRetriever, ScoringRetriever, check_search

__all__ = ["QueryMemo"]


class QueryMemo:
    """``retriever``'s ``search`` and ``score``, each distinct query prepared once (module docstring)."""

    def __init__(self, retriever: ScoringRetriever) -> None:
        self.retriever = retriever
        self.name = retriever.name
        self._preparing: PreparedRetriever | None = retriever if isinstance(retriever, PreparedRetriever) else None
        self._prepared: dict[str, Any] = {}
        self._lock = threading.Lock()

    @property
    def prepares(self) -> bool:
        """Whether the retriever is a ``PreparedRetriever`` (else every call goes to it as it is)."""
        return self._preparing is not None

    def __len__(self) -> int:
        return len(self._prepared)

    def _forms(self, retriever: PreparedRetriever, queries: Sequence[str]) -> list[Any]:
        """The prepared form of each query, preparing (in one ``prepare`` call) only the new ones."""
        with self._lock:
            missing = [query for query in dict.fromkeys(queries) if query not in self._prepared]
        if missing:
            forms = list(retriever.prepare(missing))
            if len(forms) != len(missing):
                raise ValueError(f"prepare gave {len(forms)} forms for {len(missing)} queries")
            with self._lock:
                for query, form in zip(missing, forms):
                    self._prepared.setdefault(query, form)
        with self._lock:
            return [self._prepared[query] for query in queries]

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        queries = list(queries)
        if self._preparing is None:
            return self.retriever.search(queries, k)
        check_search(queries, k)
        return self._preparing.search_prepared(self._forms(self._preparing, queries), k)

    def score(self, query: str, docs: Sequence[int]) -> np.ndarray:
        if self._preparing is None:
            return self.retriever.score(query, docs)
        return self._preparing.score_prepared(self._forms(self._preparing, [query])[0], docs)

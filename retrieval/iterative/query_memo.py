"""Prepare each query once per answer: the speculative cache's scoring and the verification share it.

Speculative retrieval asks the retriever about a query twice: the per-request cache scores its
documents for it (``score``), and the batched verification searches it (``search``). For a dense
retriever both start by embedding the query, by far the larger part of a search's cost on a CPU.
A retriever that can split that step off implements ``PreparedRetriever``:

- ``prepare(queries) -> list``: each query's prepared form (dense: its unit vector, embedded on its
  own so it does not depend on the batch; BM25: its word ids);
- ``search_prepared(prepared, k)`` / ``score_prepared(prepared_one, docs)``: exactly what
  ``search`` / ``score`` answer for those queries (they are ``prepare`` followed by these).

``QueryMemo(retriever)`` is the answer's view of the retriever (it implements ``Retriever``): it
prepares each distinct query text once, the first time it is scored or searched, keeps the prepared
form for the rest of the answer, and hands it to ``score_prepared`` / ``search_prepared``. So the
results are the retriever's own, and a verification costs only the search itself (for dense, the
FAISS search). A retriever without ``prepare`` is called as it is. One memo serves one answer; it
is safe to use from the answering thread and the verification worker at once (a query prepared
by both at the same moment is kept once; both forms are equal).
"""

from __future__ import annotations

import threading
from typing import Any, Protocol, Sequence, runtime_checkable

import numpy as np

from .retriever import Retriever, ScoredDoc, check_search

__all__ = ["PreparedRetriever", "QueryMemo"]


@runtime_checkable
class PreparedRetriever(Protocol):
    name: str

    def prepare(self, queries: Sequence[str]) -> list[Any]:
        """Each query's prepared form, independent of the other queries."""
        ...

    def search_prepared(self, prepared: Sequence[Any], k: int) -> list[list[ScoredDoc]]:
        """``search`` of the queries ``prepared`` came from."""
        ...

    def score_prepared(self, prepared: Any, docs: Sequence[int]) -> np.ndarray:
        """``score`` of the query ``prepared`` came from."""
        ...


class QueryMemo:
    """``retriever``'s ``search`` and ``score``, each distinct query prepared once (module docstring)."""

    def __init__(self, retriever: Retriever) -> None:
        self.retriever = retriever
        self.name = getattr(retriever, "name", type(retriever).__name__)
        self.prepares = isinstance(retriever, PreparedRetriever)
        self._prepared: dict[str, Any] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._prepared)

    def prepared(self, queries: Sequence[str]) -> list[Any]:
        """The prepared form of each query, preparing (in one ``prepare`` call) only the new ones."""
        with self._lock:
            missing = [query for query in dict.fromkeys(queries) if query not in self._prepared]
        if missing:
            forms = list(self.retriever.prepare(missing))  # type: ignore[attr-defined]
            if len(forms) != len(missing):
                raise ValueError(f"prepare gave {len(forms)} forms for {len(missing)} queries")
            with self._lock:
                for query, form in zip(missing, forms):
                    self._prepared.setdefault(query, form)
        with self._lock:
            return [self._prepared[query] for query in queries]

    def search(self, queries: Sequence[str], k: int) -> list[list[ScoredDoc]]:
        queries = list(queries)
        if not self.prepares:
            return self.retriever.search(queries, k)
        check_search(queries, k)
        return self.retriever.search_prepared(self.prepared(queries), k)  # type: ignore[attr-defined]

    def score(self, query: str, docs: Sequence[int]) -> np.ndarray:
        if not self.prepares:
            return self.retriever.score(query, docs)
        return self.retriever.score_prepared(self.prepared([query])[0], docs)  # type: ignore[attr-defined]

"""Sparse retrieval with BM25 from the ``bm25s`` package (``pip install bm25s``).

Documents and queries are tokenized by ``bm25s.tokenize`` (lower-cased words of two or more
characters, English stop words removed, no stemming by default); query words outside the
collection's vocabulary are ignored. ``bm25s`` precomputes every (word, document) score; a query's
score for a document is the sum of its words' scores (a repeated word counts again, as in
``bm25s``). ``score`` sums them in float64; ``search`` takes ``bm25s``'s float32 scores of every
document, keeps every document within ``tolerance`` of the ``k``-th best (so no tie is cut) and
ranks those canonically by the float64 scores (``retriever.rank``). A query with no known word
scores 0 everywhere: the first ``k`` rows.

Prepared queries (``retrieval.retriever.PreparedRetriever``): ``prepare(queries)`` gives each
query's word ids (``query_ids``); ``search_prepared`` / ``score_prepared`` take them, and ``search``
/ ``score`` are ``prepare`` followed by them, so a query is tokenized once per answer
(``query_memo.QueryMemo``). Hits carry the collection's chunks (``Collection.hits``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..retriever import Collection, Hit, check_docs, check_search, rank

__all__ = ["BM25Config", "BM25Retriever"]


@dataclass(frozen=True)
class BM25Config:
    """BM25 parameters as ``bm25s.BM25`` takes them; ``stopwords`` as ``bm25s.tokenize`` takes them."""

    k1: float = 1.5
    b: float = 0.75
    method: str = "lucene"
    stopwords: str = "en"
    tolerance: float = 1e-4

    def __post_init__(self) -> None:
        if self.k1 < 0 or not 0 <= self.b <= 1 or self.tolerance < 0:
            raise ValueError("k1 and tolerance must be >= 0 and b in [0, 1]")


def _postings_sorted(indices: np.ndarray, indptr: np.ndarray) -> bool:
    """Whether every word's posting list (a CSC column) holds ascending document rows."""
    if len(indices) < 2:
        return True
    rising = np.diff(indices.astype(np.int64)) > 0
    starts = indptr[1:-1].astype(np.int64) - 1  # the last entry of a column, before the next one's first
    rising[starts[(starts >= 0) & (starts < len(rising))]] = True
    return bool(rising.all())


class BM25Retriever:
    name = "bm25"

    def __init__(self, collection: Collection, config: BM25Config = BM25Config()) -> None:
        try:
            import bm25s
        except ImportError:
            raise RuntimeError("the BM25 retriever needs bm25s. Install it with:\n    pip install bm25s") from None
        self._bm25s = bm25s
        self.collection = collection
        self.config = config
        tokens = bm25s.tokenize(list(collection.texts), stopwords=config.stopwords, show_progress=False)
        self.bm25 = bm25s.BM25(k1=config.k1, b=config.b, method=config.method)
        self.bm25.index(tokens, show_progress=False)
        self.vocab = dict(self.bm25.vocab_dict)
        scores = self.bm25.scores
        self._data = np.asarray(scores["data"])
        self._indices = np.asarray(scores["indices"])
        self._indptr = np.asarray(scores["indptr"])
        self._sorted = _postings_sorted(self._indices, self._indptr)

    def query_ids(self, query: str) -> list[int]:
        """The word ids of ``query`` the collection knows, in query order (repeats kept)."""
        words = self._bm25s.tokenize([query], stopwords=self.config.stopwords, return_ids=False, show_progress=False)[0]
        return [self.vocab[word] for word in words if word and word in self.vocab]

    def _scores_of(self, ids: list[int], rows: np.ndarray) -> np.ndarray:
        """float64 sums, word by word in query order, of each row's precomputed word scores."""
        total = np.zeros(len(rows), dtype=np.float64)
        for word in ids:
            start, end = self._indptr[word], self._indptr[word + 1]
            posting = self._indices[start:end]
            if self._sorted:
                where = np.minimum(np.searchsorted(posting, rows), max(len(posting) - 1, 0))
                hit = posting[where] == rows if len(posting) else np.zeros(len(rows), bool)
                total[hit] += self._data[start:end][where[hit]].astype(np.float64)
            else:
                lookup = dict(zip(posting.tolist(), self._data[start:end].tolist()))
                total += np.array([lookup.get(int(r), 0.0) for r in rows], dtype=np.float64)
        return total

    def prepare(self, queries: Sequence[str]) -> list[list[int]]:
        """Each query's known word ids (``query_ids``)."""
        return [self.query_ids(query) for query in check_search(queries, 1)]

    def score(self, query: str, docs: Sequence[int]) -> np.ndarray:
        return self.score_prepared(self.query_ids(query), docs)

    def score_prepared(self, ids: list[int], docs: Sequence[int]) -> np.ndarray:
        """``score`` for a query given by its ``prepare``d word ids."""
        rows = check_docs(docs, len(self.collection))
        return self._scores_of(list(ids), rows)

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        queries = check_search(queries, k)
        return self.search_prepared(self.prepare(queries), k)

    def search_prepared(self, prepared: Sequence[list[int]], k: int) -> list[list[Hit]]:
        """``search`` for queries given by their ``prepare``d word ids."""
        check_search([], k)
        return [self._search_one(list(ids), k) for ids in prepared]

    def _search_one(self, ids: list[int], k: int) -> list[Hit]:
        n = len(self.collection)
        k = min(k, n)
        if not ids:
            return self.collection.hits([(i, 0.0) for i in range(k)])
        full = np.asarray(self.bm25.get_scores_from_ids(ids), dtype=np.float32)  # [n]
        kth = float(np.partition(full, n - k)[n - k])
        threshold = kth - self.config.tolerance * max(1.0, abs(kth))
        if threshold <= 0.0:  # fewer than k documents match: the rest score 0, lowest rows first
            matched = np.flatnonzero(full > 0)
            best = rank(matched, self._scores_of(ids, matched), k)
            taken = {doc for doc, _ in best}
            zeros = (i for i in range(n) if i not in taken)
            return self.collection.hits(best + [(next(zeros), 0.0) for _ in range(k - len(best))])
        candidates = np.flatnonzero(full >= threshold)
        return self.collection.hits(rank(candidates, self._scores_of(ids, candidates), k))

"""Dense retrievers over FAISS: exact (``IndexFlatIP``) and approximate (``IndexHNSWFlat``).

Documents are embedded once (or their unit vectors passed in, e.g. a benchmark's cached
embeddings); a query's score for a document is the inner product of their unit vectors (cosine),
computed in float64 by ``score``. ``search`` asks FAISS for a fixed number of candidates per query
(``candidates``, or ``k`` when larger: the FAISS call, and so its answer, does not depend on a
smaller ``k``), rescores them with ``score``'s function and ranks them canonically
(``retriever.rank``). The exact retriever also checks the boundary: when the ``k``-th best score
lies within ``boundary_tolerance`` of the weakest candidate's, FAISS's float32 order may have cut a
tie, and that query is scored against every document instead.

Batch invariance: each query is embedded on its own (a padded batch would round differently), so a
query's vector, and its results, do not depend on the other queries of a batched verification.
FAISS searches each query of a batch independently (HNSW's graph walk depends only on the vector).

Prepared queries (``retrieval.retriever.PreparedRetriever``): ``prepare(queries)`` is that embedding (one
unit vector per query), ``search_prepared`` / ``score_prepared`` take those vectors, and
``search`` / ``score`` are ``prepare`` followed by them, so an answer that embeds a query once for
the speculative cache reuses the vector in the batched verification (``query_memo.QueryMemo``) and
gets the very same results.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..embedder import TextEmbedder, embed_each
from ..faiss_index import import_faiss, new_hnsw, unit_rows
from ..index_config import HNSWConfig
from ..retriever import Collection, Hit, check_docs, check_search, dot64, rank

__all__ = ["DenseConfig", "DenseHNSWConfig", "DenseFlatRetriever", "DenseHNSWRetriever"]

_EXHAUSTIVE_BLOCK = 65536  # rows scored at a time by the exhaustive fallback


@dataclass(frozen=True)
class DenseConfig:
    """candidates: FAISS results rescored per query (the most ``k`` may be without changing answers).
    boundary_tolerance: a k-th score this close to the weakest candidate's triggers an exhaustive
    rescoring (exact retriever only)."""

    candidates: int = 32
    boundary_tolerance: float = 1e-5

    def __post_init__(self) -> None:
        if self.candidates < 1 or self.boundary_tolerance < 0:
            raise ValueError("candidates must be >= 1 and boundary_tolerance >= 0")


@dataclass(frozen=True)
class DenseHNSWConfig:
    """The HNSW retriever: its graph (``index_config.HNSWConfig``; built with a wider beam than a
    document index's default, ``ef_construction`` 80; the search beam is raised to the candidate
    count when smaller) and its candidates (``dense``)."""

    graph: HNSWConfig = HNSWConfig(ef_construction=80)
    dense: DenseConfig = DenseConfig()


class _DenseRetriever:
    """What both dense retrievers share: the vectors, query embedding, ``score`` and rescoring."""

    name = "dense"
    exact = True

    def __init__(
        self, collection: Collection, embedder: TextEmbedder, vectors: np.ndarray | None, config: DenseConfig
    ) -> None:
        self.collection = collection
        self.embedder = embedder
        self.config = config
        if vectors is None:
            vectors = embedder.encode(list(collection.texts))
        vectors = unit_rows(np.asarray(vectors))
        if vectors.ndim != 2 or vectors.shape[0] != len(collection):
            raise ValueError(f"vectors must have shape ({len(collection)}, dim), got {vectors.shape}")
        self.vectors = vectors  # [n, dim] float32, unit rows
        self.faiss = import_faiss()
        self.index: Any = None

    def embed(self, queries: Sequence[str]) -> np.ndarray:
        """``[len(queries), dim]`` float32 unit vectors, each query embedded alone (batch invariant)."""
        return embed_each(self.embedder, queries, self.vectors.shape[1])

    def prepare(self, queries: Sequence[str]) -> list[np.ndarray]:
        """Each query's float32 unit vector (``embed``, one query at a time)."""
        return list(self.embed(check_search(queries, 1)))

    def score(self, query: str, docs: Sequence[int]) -> np.ndarray:
        return self.score_prepared(self.prepare([query])[0], docs)

    def score_prepared(self, vector: np.ndarray, docs: Sequence[int]) -> np.ndarray:
        """``score`` for a query given by its ``prepare``d vector."""
        rows = check_docs(docs, len(self.collection))
        return dot64(self.vectors[rows], vector)

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        queries = check_search(queries, k)
        return self.search_prepared(self.prepare(queries), k)

    def search_prepared(self, prepared: Sequence[np.ndarray], k: int) -> list[list[Hit]]:
        """``search`` for queries given by their ``prepare``d vectors (only the FAISS search and
        the rescoring run here)."""
        check_search([], k)
        if not len(prepared):
            return []
        vectors = np.ascontiguousarray(np.stack([np.asarray(v, dtype=np.float32).reshape(-1) for v in prepared]))
        if vectors.shape[1] != self.vectors.shape[1]:
            raise ValueError(
                f"query vectors have {vectors.shape[1]} dimensions, the document vectors {self.vectors.shape[1]}"
            )
        wanted = min(max(self.config.candidates, k), len(self.collection))
        _, found = self.index.search(vectors, wanted)  # [nq, wanted], -1 where HNSW found fewer
        return [self._ranked(found[i][found[i] >= 0], vectors[i], k) for i in range(len(vectors))]

    def _ranked(self, candidates: np.ndarray, query: np.ndarray, k: int) -> list[Hit]:
        candidates = np.unique(candidates)
        scores = dot64(self.vectors[candidates], query)
        best = self.collection.hits(rank(candidates, scores, k))
        if self.exact and self._at_boundary(best, scores, k):
            return self.collection.hits(rank(np.arange(len(self.collection)), self._all_scores(query), k))
        return best

    def _at_boundary(self, best: list[Hit], scores: np.ndarray, k: int) -> bool:
        if len(scores) >= len(self.collection):
            return False  # every document was a candidate
        if len(best) < k:
            return True
        return best[-1].score - float(scores.min()) <= self.config.boundary_tolerance

    def _all_scores(self, query: np.ndarray) -> np.ndarray:
        n = len(self.collection)
        return np.concatenate(
            [dot64(self.vectors[i : i + _EXHAUSTIVE_BLOCK], query) for i in range(0, n, _EXHAUSTIVE_BLOCK)]
        )


class DenseFlatRetriever(_DenseRetriever):
    """Exact dense retrieval: FAISS ``IndexFlatIP`` over every document's unit vector."""

    name = "dense"
    exact = True

    def __init__(
        self,
        collection: Collection,
        embedder: TextEmbedder,
        vectors: np.ndarray | None = None,
        config: DenseConfig = DenseConfig(),
    ) -> None:
        super().__init__(collection, embedder, vectors, config)
        self.index = self.faiss.IndexFlatIP(self.vectors.shape[1])
        self.index.add(self.vectors)


class DenseHNSWRetriever(_DenseRetriever):
    """Approximate dense retrieval: FAISS ``IndexHNSWFlat`` (inner product). ``index``: a prebuilt
    HNSW index over ``vectors`` (e.g. read back with ``faiss.read_index``) instead of building one."""

    name = "hnsw"
    exact = False

    def __init__(
        self,
        collection: Collection,
        embedder: TextEmbedder,
        vectors: np.ndarray | None = None,
        config: DenseHNSWConfig = DenseHNSWConfig(),
        index: Any = None,
    ) -> None:
        super().__init__(collection, embedder, vectors, config.dense)
        self.hnsw_config = config
        if index is None:
            index = new_hnsw(self.faiss, self.vectors.shape[1], config.graph)
            index.add(self.vectors)
        elif index.ntotal != len(collection) or index.d != self.vectors.shape[1]:
            raise ValueError(
                f"the HNSW index holds {index.ntotal} vectors of {index.d} dimensions; expected "
                f"{len(collection)} of {self.vectors.shape[1]}"
            )
        index.hnsw.efSearch = max(config.graph.ef_search, config.dense.candidates)
        self.index = index

    def search_prepared(self, prepared: Sequence[np.ndarray], k: int) -> list[list[Hit]]:
        if k > self.config.candidates and self.index.hnsw.efSearch < k:
            self.index.hnsw.efSearch = k  # faiss would raise it for this call anyway
        return super().search_prepared(prepared, k)

"""Iterative RAG over a saved ``DocumentIndex``, for ``specdraft ask --iterative`` and the RAG HTTP API.

``IterativeRetrievers`` turns an index into the ``Collection`` of its chunks (``DocumentIndex.collection``:
row ``i`` = the index's chunk ``i``; ids ``"<document id>#<n>"``) and builds one retriever per kind over
it (``dense``: exact FAISS flat, ``hnsw``: FAISS HNSW, ``bm25``: bm25s; ``specdraft.retrieval.iterative``).
The dense kinds reuse the index's own vectors (``DocumentIndex.vectors``: read back from its FAISS
index when it stores them, else embedded again) and embed queries with the index's embedder.
Retrievers are cached per (index object, its chunk count, kind): an index that gains documents, or
is replaced by a newer one, gets new retrievers; an answer in progress keeps the retriever it
started with, so it never mixes two versions of an index.

Speculative answers share one OS^3 scheduler (``OS3Scheduler``, which picks how many strides to
speculate, or to retrieve plainly) per (retriever object, model, OS^3 configuration):
``SharedSchedulers``, one per ``IterativeRetrievers`` (so one per app) and held weakly by the retriever, so the
estimates (acceptance, stride, verification and retrieval seconds) carry across requests over one
index version, and a new version (a new retriever from ``IterativeRetrievers``) starts a fresh one.
The model is part of the key because a stride's seconds and the acceptance are the model's. Only
the speed depends on the scheduler, never an answer. A retriever or model that cannot be weakly
referenced gets a fresh scheduler per answer (as before sharing).

``event_dict`` is the JSON shape of one streamed event: ``{"retrieval": RetrievalRecord.to_dict()
+ "doc_id"}`` or ``{"text": ...}``.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, TypeAlias

import numpy as np

from specdraft.retrieval.index import DocumentIndex
from specdraft.retrieval.iterative import (
    RETRIEVER_KINDS,
    Collection,
    IterativeRAG,
    IterativeRAGConfig,
    RetrievalRecord,
    ScoringRetriever,
    SpeculativeRetrievalConfig,
    make_retriever,
)
from specdraft.retrieval.iterative.os3 import OS3Config, OS3Scheduler
from specdraft.retrieval.iterative.speculative import os3_config

__all__ = [
    "RETRIEVER_CHOICES",
    "IterativeRetrievers",
    "SharedScheduler",
    "SharedSchedulers",
    "collection_of",
    "iterative_rag",
    "event_dict",
]

RETRIEVER_CHOICES = RETRIEVER_KINDS
RETRIEVAL_TIMEOUT_S = 60.0  # one search past this ends the answer with an error naming the retriever (a 502 over HTTP)


def collection_of(index: DocumentIndex) -> tuple[Collection, np.ndarray | None]:
    """The index's chunks as a ``Collection``, and their unit vectors when FAISS can give them back
    (ValueError for an empty index)."""
    return index.collection(), index.vectors()


class IterativeRetrievers:
    """Retrievers over indexes, built once per (index, chunk count, kind), and the OS^3 schedulers
    their speculative answers share (``schedulers``); thread-safe."""

    def __init__(self, capacity: int = 8) -> None:
        self.schedulers = SharedSchedulers()
        self._cache: dict[tuple[int, int, str], tuple[ScoringRetriever, Collection, DocumentIndex]] = {}
        self._lock = threading.Lock()
        self._capacity = capacity

    def get(self, index: DocumentIndex, kind: str) -> tuple[ScoringRetriever, Collection]:
        if kind not in RETRIEVER_CHOICES:
            raise ValueError(f"retriever must be one of {', '.join(RETRIEVER_CHOICES)}, got {kind!r}")
        key = (id(index), len(index), kind)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None and hit[2] is index:
                return hit[0], hit[1]
            collection, vectors = collection_of(index)
            embedder = None if kind == "bm25" else index.embedder
            retriever = make_retriever(kind, collection, embedder, vectors if kind != "bm25" else None)
            if len(self._cache) >= self._capacity:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = (retriever, collection, index)  # the index is held so its id is not reused
            return retriever, collection


class SharedScheduler(OS3Scheduler):
    """An ``OS3Scheduler`` that also counts the answers it served (``answers``; ``observations``
    counts what it was told), so a caller can see that its estimates carry across answers."""

    def __init__(self, config: OS3Config = OS3Config()) -> None:
        super().__init__(config)
        self.answers = 0


# model -> the scheduler of each OS^3 config (SharedSchedulers keeps one of these per retriever)
_ByModel: TypeAlias = "weakref.WeakKeyDictionary[Any, dict[OS3Config, SharedScheduler]]"


class SharedSchedulers:
    """One ``SharedScheduler`` per (retriever, model, OS^3 configuration), held only as long as the
    retriever and the model live (module docstring); thread-safe."""

    def __init__(self) -> None:
        self._by_retriever: weakref.WeakKeyDictionary[Any, _ByModel] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def get(self, retriever: Any, model: Any, config: OS3Config) -> SharedScheduler:
        """The scheduler for this retriever and model (a new one the first time); counts one answer."""
        with self._lock:
            try:
                by_model = self._by_retriever.setdefault(retriever, weakref.WeakKeyDictionary())
                scheduler = by_model.setdefault(model, {}).setdefault(config, SharedScheduler(config))
            except TypeError:  # not weakly referenceable: no sharing
                scheduler = SharedScheduler(config)
            scheduler.answers += 1
            return scheduler

    def find(self, retriever: Any, model: Any, config: OS3Config) -> SharedScheduler | None:
        """The scheduler already kept for this retriever and model, if any (counts nothing)."""
        with self._lock:
            try:
                return self._by_retriever.get(retriever, {}).get(model, {}).get(config)
            except TypeError:
                return None


def iterative_rag(
    model: Any,
    retriever: ScoringRetriever,
    collection: Collection,
    max_new_tokens: int,
    speculative: bool,
    schedulers: SharedSchedulers | None = None,
) -> IterativeRAG:
    """Iterative RAG with the default stride and query length, each search limited to
    ``RETRIEVAL_TIMEOUT_S``; speculative retrieval (async verification, OS^3) when ``speculative``,
    with the OS^3 scheduler that ``schedulers`` keeps for this retriever and model (None: a fresh
    one for this pipeline)."""
    config = IterativeRAGConfig(max_new_tokens=max_new_tokens, retrieval_timeout_s=RETRIEVAL_TIMEOUT_S)
    spec = SpeculativeRetrievalConfig() if speculative else None
    scheduler = (
        schedulers.get(retriever, model, os3_config(spec)) if spec is not None and schedulers is not None else None
    )
    return IterativeRAG(model, retriever, collection, config, speculative=spec, scheduler=scheduler)


def event_dict(event: Any, collection: Collection) -> dict[str, Any]:
    """One streamed event as JSON (module docstring)."""
    if isinstance(event, RetrievalRecord):
        record = event.to_dict()
        record["doc_id"] = collection.ids[event.doc]
        record["text"] = collection.texts[event.doc]
        return {"retrieval": record}
    return {"text": event.text}

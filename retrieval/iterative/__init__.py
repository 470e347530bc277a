"""Iterative RAG and speculative retrieval (RaLMSpec, Zhang et al., ICML 2024).

Iterative RAG retrieves again every ``stride`` generated tokens, with the last ``query_tokens``
tokens of question + answer as the query, and puts the top document(s) before the question in the
prompt (``prompt``: the layout, and how the KV cache of the unchanged prefix is kept). Speculative
retrieval answers those retrievals from a small per-request cache, verifies them in one batched
search (on a worker thread while the model keeps generating), rolls back to the first wrong guess
and regenerates from there: the answer and the documents of every stride are exactly plain
iterative RAG's.

API (H4 builds on it)::

    from specdraft.retrieval.iterative import (
        Collection, make_retriever, IterativeRAG, IterativeRAGConfig, SpeculativeRetrievalConfig)

    collection = Collection(texts=[...], ids=[...])
    retriever = make_retriever("dense" | "hnsw" | "bm25", collection, embedder=None, vectors=None)
    rag = IterativeRAG(model, retriever, collection, IterativeRAGConfig(stride=4, query_tokens=32),
                       speculative=SpeculativeRetrievalConfig(max_strides=4, os3=True,
                                                              async_verify=True, prefetch_k=4))
    answer = rag.generate(question, GenerationConfig(...))   # IterativeAnswer
    answer.text, answer.token_ids, answer.retrievals, answer.stats, answer.to_dict()
    stream = rag.stream(question)      # IterativeStream: RetrievalRecord and TextPiece events
    for event in stream: ...           # then stream.answer; stream.stop() ends early

- The retriever contract is ``specdraft.retrieval.retriever`` (re-exported here): ``Collection(texts,
  ids)``; ``Hit(doc, chunk, score)`` (doc = row); iterative RAG needs a ``ScoringRetriever``:
  ``name``, ``search(queries, k) -> list[list[Hit]]`` (canonical: score descending, row ascending,
  independent of the batch and of ``k``) and ``score(query, docs) -> np.ndarray``. The three
  retrievers are also ``PreparedRetriever``s: ``prepare(queries)`` (embed / tokenize) and prepared
  queries in ``search_prepared`` / ``score_prepared``, so an answer prepares each query once
  (``query_memo.QueryMemo``: the cache's scoring and the verification share the embedding).
- ``DenseFlatRetriever(collection, embedder, vectors=None, config=DenseConfig())`` (FAISS
  IndexFlatIP, exact), ``DenseHNSWRetriever(collection, embedder, vectors=None,
  config=DenseHNSWConfig(), index=None)`` (FAISS HNSW), ``BM25Retriever(collection, BM25Config())``
  (bm25s); ``make_retriever(kind, collection, embedder=None, vectors=None)``; ``RETRIEVER_KINDS``.
- ``RetrievalRecord(stride, query, docs, source "retriever"|"cache", status
  "exact"|"confirmed"|"rolled_back", seconds, doc_ids, start_token, guessed)`` (``.doc`` = docs[0]).
- ``IterativeAnswer(question, text, token_ids, retrievals, finish_reason, stats, pieces)``.
- ``RetrieverError``: a retriever raised or answered out of shape; the message names it.
"""

from ..retriever import Collection, Hit, PreparedRetriever, Retriever, RetrieverError, ScoringRetriever
from .config import INSTRUCTION, IterativeRAGConfig, SpeculativeRetrievalConfig
from .factory import RETRIEVER_KINDS, make_retriever
from .pipeline import IterativeRAG, IterativeStream, NeedsLocalModel, keeps_a_session
from .records import IterativeAnswer, RetrievalRecord

__all__ = [
    "INSTRUCTION",
    "RETRIEVER_KINDS",
    "Collection",
    "Hit",
    "IterativeAnswer",
    "IterativeRAG",
    "IterativeRAGConfig",
    "IterativeStream",
    "NeedsLocalModel",
    "PreparedRetriever",
    "RetrievalRecord",
    "Retriever",
    "RetrieverError",
    "ScoringRetriever",
    "SpeculativeRetrievalConfig",
    "keeps_a_session",
    "make_retriever",
]

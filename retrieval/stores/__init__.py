"""Bring your own vector store: Chroma, LanceDB, Qdrant (local mode), Milvus Lite, and LangChain retrievers.

Every adapter is a ``Retriever`` (``specdraft.retrieval.retriever``), so the RAG pipeline, its
reference and datastore drafters, and iterative RAG read the user's store as they read a
``DocumentIndex``::

    from specdraft.retrieval.stores import StoreConfig, open_store, build_store

    config = StoreConfig("chroma", path="./chroma", collection="docs")
    store = build_store(config, [{"id": "a", "text": "..."}])   # chunk, embed (our embedder), write
    store = open_store(config)                                  # or an existing collection
    RAGPipeline(store, model).ask("...")
    IterativeRAG(model, store, store.collection, speculative=SpeculativeRetrievalConfig())

- ``StoreConfig`` (``config``): the store (``STORES``), where it lives, the collection, the fields
  holding a record's text and vector, the candidate count.
- ``StoreRetriever`` (``base``): a collection as a ``PreparedRetriever`` (a ``ScoringRetriever``
  whose queries are embedded once), searching canonically (score descending, row ascending) with
  the store's candidates rescored; exact on LanceDB, Qdrant and Milvus Lite (flat searches),
  approximate on Chroma (its HNSW graph gives the candidates).
- ``open_store`` / ``build_store`` / ``add_to_store`` (``registry``): open a collection, build one
  from documents, or add documents to one.
- ``LangChainRetriever`` (``langchain_retriever``): any LangChain ``BaseRetriever`` (every store
  LangChain wraps) as a ``Retriever`` for the RAG pipeline.

Each store's client is an optional extra (``pip install 'specdraft[chroma]'``, ``[lancedb]``,
``[qdrant]``, ``[milvus]``, ``[langchain]``), imported only when a store is opened; a missing one
is a ``StoreNotInstalledError`` naming the extra. All the errors are ``StoreError``s (ValueErrors).
"""

from .base import (
    CollectionExistsError,
    CollectionNotFoundError,
    StoreError,
    StoreNotInstalledError,
    StoreRetriever,
)
from .config import EXTRAS, MEMORY, STORES, StoreConfig
from .langchain_retriever import LangChainRetriever
from .registry import add_to_store, build_store, open_store

__all__ = [
    "EXTRAS",
    "MEMORY",
    "STORES",
    "CollectionExistsError",
    "CollectionNotFoundError",
    "LangChainRetriever",
    "StoreConfig",
    "StoreError",
    "StoreNotInstalledError",
    "StoreRetriever",
    "add_to_store",
    "build_store",
    "open_store",
]

"""retrieval: drafting from what a RAG pipeline retrieved (LLMA) and from a token corpus (REST).

- ``Retriever`` / ``Hit``: the one retriever contract the RAG pipeline and iterative RAG search
  through (``specdraft.retrieval.retriever``).
- ``DocumentIndex``: documents chunked, embedded with sentence-transformers and searched with FAISS,
  persisted crash-safely (``specdraft.retrieval.index``); a ``Retriever``.
- ``ReferenceDrafter``: drafts what follows the output's longest suffix n-gram in the retrieved
  documents, as a token tree when they disagree (``specdraft.retrieval.reference_drafter``).
- ``Datastore`` / ``DatastoreDrafter``: a persistent suffix index over a token corpus whose
  continuations are merged into a token tree (``specdraft.retrieval.datastore``).
- ``StoreConfig`` / ``open_store`` / ``build_store`` / ``StoreRetriever``: the user's own vector
  store (Chroma, LanceDB, Qdrant's local mode, Milvus Lite) as a retriever, and
  ``LangChainRetriever`` for any LangChain retriever (``specdraft.retrieval.stores``; each store's
  client is an optional extra, imported when a store is opened).

Heavy dependencies (faiss, sentence-transformers) are imported only when an index is used.
"""

from .datastore import Datastore, DatastoreDraftConfig, DatastoreDrafter
from .embedder import Embedder, EmbedderConfig
from .index import Chunk, DocumentIndex, IndexConfig
from .index_config import HNSWConfig
from .reference_drafter import ReferenceDraftConfig, ReferenceDrafter
from .retriever import Collection, Hit, PreparedRetriever, Retriever, RetrieverError, ScoringRetriever
from .stores import LangChainRetriever, StoreConfig, StoreError, StoreRetriever, build_store, open_store

__all__ = [
    "Chunk",
    "Collection",
    "Datastore",
    "DatastoreDraftConfig",
    "DatastoreDrafter",
    "DocumentIndex",
    "Embedder",
    "EmbedderConfig",
    "HNSWConfig",
    "Hit",
    "IndexConfig",
    "LangChainRetriever",
    "PreparedRetriever",
    "ReferenceDraftConfig",
    "ReferenceDrafter",
    "Retriever",
    "RetrieverError",
    "ScoringRetriever",
    "StoreConfig",
    "StoreError",
    "StoreRetriever",
    "build_store",
    "open_store",
]

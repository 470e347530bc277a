"""retrieval: drafting from what a RAG pipeline retrieved (LLMA) and from a token corpus (REST).

- ``DocumentIndex``: documents chunked, embedded with sentence-transformers and searched with FAISS,
  persisted crash-safely (``specdraft.retrieval.index``).
- ``ReferenceDrafter``: drafts what follows the output's longest suffix n-gram in the retrieved
  documents, as a token tree when they disagree (``specdraft.retrieval.reference_drafter``).
- ``Datastore`` / ``DatastoreDrafter``: a persistent suffix index over a token corpus whose
  continuations are merged into a token tree (``specdraft.retrieval.datastore``).

Heavy dependencies (faiss, sentence-transformers) are imported only when an index is used.
"""

from .datastore import Datastore, DatastoreDraftConfig, DatastoreDrafter
from .embedder import Embedder, EmbedderConfig
from .index import Chunk, DocumentIndex, Hit, IndexConfig
from .reference_drafter import ReferenceDraftConfig, ReferenceDrafter

__all__ = [
    "Chunk",
    "Datastore",
    "DatastoreDraftConfig",
    "DatastoreDrafter",
    "DocumentIndex",
    "Embedder",
    "EmbedderConfig",
    "Hit",
    "IndexConfig",
    "ReferenceDraftConfig",
    "ReferenceDrafter",
]

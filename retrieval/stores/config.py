"""``StoreConfig``: which vector store, where, which collection, and how its records read as documents.

A frozen, validated value: a bad field raises ``ValueError`` naming it. ``STORES`` are the names
``store`` takes (each an optional extra of specdraft: ``pip install specdraft[chroma]`` and so on).

Where the store lives (``path``):

- ``chroma``: a ``chromadb.PersistentClient`` folder, or ``":memory:"`` (an ephemeral client);
- ``lancedb``: a LanceDB database folder, or ``":memory:"`` (LanceDB's ``memory://``);
- ``qdrant``: Qdrant's local mode (``QdrantClient(path=...)``, no server), or ``":memory:"``;
- ``milvus``: a Milvus Lite database file (``*.db``; ``pymilvus`` + ``milvus-lite``).

How a record reads as a document (an existing collection, built by anyone):

- its text is the payload field ``text_field`` (None: the store's usual place: Chroma's documents,
  the ``"text"`` field elsewhere);
- its vector is ``vector_field`` (None: the store's default: Chroma's embeddings, LanceDB's
  ``"vector"`` column, Qdrant's unnamed vector, Milvus's ``"vector"`` field);
- the chunk id and the document id are the payload fields ``"chunk_id"`` / ``"doc_id"`` when present
  (a collection specdraft built has them), else the record's id (as a string) for both; the
  metadata is the payload field ``"metadata"`` (a JSON object, or its JSON text) when present,
  else the rest of the payload.

The vectors must come from the embedder the adapter is opened with (the same model, the same
dimension; the dimension is checked when the collection is opened).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..iterative.dense import DenseConfig

__all__ = ["MEMORY", "STORES", "EXTRAS", "StoreConfig"]

STORES = ("chroma", "lancedb", "qdrant", "milvus")
# the optional extra (pip install specdraft[EXTRA]) that installs each store's client
EXTRAS = {"chroma": "chroma", "lancedb": "lancedb", "qdrant": "qdrant", "milvus": "milvus", "langchain": "langchain"}
MEMORY = ":memory:"
DEFAULT_COLLECTION = "specdraft"


@dataclass(frozen=True)
class StoreConfig:
    """store: one of ``STORES``. path: where it lives (module docstring; ``":memory:"`` for an
    in-process store, except Milvus Lite, which needs a file). collection: the collection (Chroma,
    Qdrant, Milvus) or table (LanceDB). text_field / vector_field: where a record's text and vector
    are (module docstring; None: the store's default). dense: how many candidates a search asks the
    store for and rescores, and the tie tolerance that widens it (``DenseConfig``, as the dense
    retrievers of iterative RAG)."""

    store: str
    path: str = MEMORY
    collection: str = DEFAULT_COLLECTION
    text_field: str | None = None
    vector_field: str | None = None
    dense: DenseConfig = field(default_factory=DenseConfig)

    def __post_init__(self) -> None:
        if self.store not in STORES:
            raise ValueError(f"store must be one of {', '.join(STORES)}, got {self.store!r}")
        for name in ("path", "collection"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{name} must be a non-empty string, got {value!r}")
        for name in ("text_field", "vector_field"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ValueError(f"{name} must be None or a non-empty string, got {value!r}")
        if self.store == "milvus" and self.in_memory:
            raise ValueError("path: Milvus Lite keeps its database in a file (e.g. ./milvus.db), not in memory")

    @property
    def in_memory(self) -> bool:
        """Whether the store lives in this process only (``path`` is ``":memory:"``)."""
        return self.path == MEMORY

    def describe(self) -> str:
        """``"chroma collection 'docs' at /data/chroma"``: what error messages call it."""
        where = "in memory" if self.in_memory else f"at {self.path}"
        return f"{self.store} collection {self.collection!r} {where}"

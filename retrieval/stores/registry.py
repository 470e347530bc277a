"""The store registry: a store's name -> its module, and the two ways to get a ``StoreRetriever``.

- ``open_store(config, embedder=None)``: an existing collection (``CollectionNotFoundError``, a
  ``StoreError``, when there is none, or no store at the path; nothing is written, no folder
  made; a client that fails to open the store is a ``StoreError`` naming it).
- ``build_store(config, documents, embedder=None, chunking=IndexConfig(), overwrite=False)``:
  documents (``{"id", "text", "metadata"?}``, as ``DocumentIndex.add`` takes them) chunked as a
  document index chunks them, embedded, and written into a new collection; then opened. Every
  document is checked and every chunk embedded before the store is touched (a bad document is an
  ``InvalidDocumentError`` and nothing is written); an existing collection is a
  ``CollectionExistsError`` unless ``overwrite`` (then it is deleted first). A write that fails
  deletes the collection it was writing, so no half-built collection is left behind.
- ``add_to_store(config, documents, embedder=None, chunking=IndexConfig())``: documents added to an
  existing collection, checked and embedded first (ids new in the collection too); a write that
  fails deletes the records it wrote.

Each store module (``STORE_MODULES``) defines ``CLIENTS`` (the modules its extra installs),
``open_backend(config)`` and ``create_backend(config, dim, overwrite)``, and imports its client
library only when called (``base.import_client``: ``StoreNotInstalledError`` naming the extra when
it is missing; ``open_store`` checks that first). ``embedder`` None: the packaged
all-MiniLM-L6-v2 (``retrieval.embedder.Embedder``).
"""

from __future__ import annotations

import importlib
from collections.abc import Container, Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from ..chunker import Chunk, chunk_documents, validate_documents
from ..embedder import Embedder, TextEmbedder
from ..faiss_index import unit_rows
from ..index_config import IndexConfig
from .base import CollectionNotFoundError, StoreError, StoreRetriever, check_dimension, import_client
from .config import STORES, StoreConfig

__all__ = ["STORE_MODULES", "store_module", "open_store", "build_store", "add_to_store"]

STORE_MODULES = {store: f"{__package__}.{store}_store" for store in STORES}


def store_module(store: str) -> ModuleType:
    """The module of ``store`` (one of ``STORES``; ValueError otherwise)."""
    if store not in STORE_MODULES:
        raise ValueError(f"unknown store {store!r}: choose one of {', '.join(STORES)}")
    return importlib.import_module(STORE_MODULES[store])


def open_store(config: StoreConfig, embedder: TextEmbedder | None = None) -> StoreRetriever:
    """The collection ``config`` names, as a retriever (module docstring)."""
    embedder = embedder if embedder is not None else Embedder()
    return open_store_backend(_open_backend(config), embedder, config)


def _open_backend(config: StoreConfig) -> Any:
    """The store module's backend of the existing collection (``open_store``'s errors)."""
    module = store_module(config.store)
    for client in module.CLIENTS:
        import_client(client, config.store)
    if not config.in_memory and not Path(config.path).exists():
        raise CollectionNotFoundError(f"no {config.describe()}: {config.path} does not exist")
    try:
        return module.open_backend(config)
    except (StoreError, ValueError):
        raise
    except Exception as error:  # the client's own errors (a damaged folder, a file of another kind)
        raise StoreError(f"the {config.describe()} cannot be opened: {type(error).__name__}: {error}") from None


def build_store(
    config: StoreConfig,
    documents: Iterable[Mapping[str, Any]],
    embedder: TextEmbedder | None = None,
    chunking: IndexConfig = IndexConfig(),
    *,
    overwrite: bool = False,
    progress: bool = False,
) -> StoreRetriever:
    """Write ``documents`` into a new collection and open it (module docstring). ``chunking``: the
    chunk size and overlap (``IndexConfig.chunk_words`` / ``chunk_overlap``; its FAISS fields do
    not apply). Rows, chunk ids and vectors are a ``DocumentIndex``'s for the same documents."""
    embedder = embedder if embedder is not None else Embedder()
    chunks, vectors = _embedded_chunks(documents, (), embedder, chunking, progress)
    module = store_module(config.store)
    if not config.in_memory:
        folder = Path(config.path) if config.store != "milvus" else Path(config.path).parent
        folder.mkdir(parents=True, exist_ok=True)
    backend = module.create_backend(config, int(vectors.shape[1]), overwrite)
    try:
        backend.write(list(range(len(chunks))), chunks, vectors)
    except BaseException:
        try:
            backend.drop()
        finally:
            backend.close()
        raise
    return open_store_backend(backend, embedder, config)  # the same client: an in-memory store lives in it


def add_to_store(
    config: StoreConfig,
    documents: Iterable[Mapping[str, Any]],
    embedder: TextEmbedder | None = None,
    chunking: IndexConfig = IndexConfig(),
    *,
    progress: bool = False,
) -> int:
    """Add ``documents`` to the existing collection ``config`` names; returns the chunks added.

    Chunked and embedded as ``build_store`` does (``chunking``: the chunk size and overlap; a store
    does not record the ones it was built with). Every document is checked first, its id against
    the collection's document ids too (``InvalidDocumentError``, nothing written); the embedder must
    give the collection's dimension (``StoreError``). New records take the keys after the largest
    numeric key, so rows keep the order of addition; a write that fails deletes the records it
    wrote, leaving the collection as it was."""
    embedder = embedder if embedder is not None else Embedder()
    backend = _open_backend(config)
    try:
        check_dimension(config, backend, embedder, "add")  # before anything is embedded
        records = list(backend.records())
        existing = {record.doc_id for record in records}
        chunks, vectors = _embedded_chunks(documents, existing, embedder, chunking, progress)
        numeric = [int(record.key) for record in records if str(record.key).isdigit()]
        first = max(numeric, default=-1) + 1
        keys = list(range(first, first + len(chunks)))
        try:
            backend.write(keys, chunks, vectors)
        except BaseException:
            backend.delete(keys)
            raise
        return len(chunks)
    finally:
        backend.close()


def _embedded_chunks(
    documents: Iterable[Mapping[str, Any]],
    existing_ids: Container[str],
    embedder: TextEmbedder,
    chunking: IndexConfig,
    progress: bool,
) -> tuple[list[Chunk], np.ndarray]:
    """The documents checked (ids new against ``existing_ids``), chunked, and their unit vectors."""
    chunks = chunk_documents(
        validate_documents(list(documents), existing_ids), chunking.chunk_words, chunking.chunk_overlap
    )
    if not chunks:
        raise ValueError("no documents to write")
    vectors = unit_rows(np.asarray(embedder.encode([chunk.text for chunk in chunks], progress=progress)))
    if vectors.ndim != 2 or vectors.shape[0] != len(chunks):
        raise ValueError(f"embedder {embedder.name!r} returned shape {vectors.shape} for {len(chunks)} texts")
    return chunks, vectors


def open_store_backend(backend: Any, embedder: TextEmbedder, config: StoreConfig) -> StoreRetriever:
    """A retriever over an opened backend (closing it when the collection cannot be used)."""
    try:
        return StoreRetriever(backend, embedder, config)
    except BaseException:
        backend.close()
        raise

"""Chroma (``chromadb``, the ``chroma`` extra): a ``PersistentClient`` folder or an in-memory client.

Approximate: Chroma searches its HNSW graph (there is no flat index), so the adapter's candidates
are the graph's (``StoreRetriever`` rescores them exactly; a neighbour the graph misses is missed).
Collections specdraft builds use the inner-product space with a search beam of
``SEARCH_EF`` (or the candidate count, when larger), and on the small collections of a test every
record is reached. A record's text is its Chroma document (or the metadata field ``text_field``);
keys are Chroma's string ids (specdraft writes the rows zero-padded: ``KEY_WIDTH`` digits).
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

import numpy as np

from ..chunker import Chunk
from .base import (
    CollectionExistsError,
    CollectionNotFoundError,
    Key,
    Record,
    StoreError,
    import_client,
    payload_of,
    record_from,
)
from .config import StoreConfig

CLIENTS = ("chromadb",)  # the modules its extra installs (imported when a store is opened)

__all__ = ["open_backend", "create_backend", "ChromaBackend"]

KEY_WIDTH = 12  # zero-padded rows as ids: string order = row order
SEARCH_EF = 200  # the HNSW search beam of collections specdraft builds
_PAGE = 5000  # records read or written per call


def _client(config: StoreConfig) -> Any:
    chromadb = import_client("chromadb", "chroma")
    if config.vector_field is not None:
        raise ValueError("vector_field: a Chroma record has one embedding; leave vector_field unset")
    # chromadb's default settings: a process keeps one client per folder and refuses a second one
    # with other settings, so these must be what other libraries (LangChain's Chroma) open it with
    if config.in_memory:
        return chromadb.EphemeralClient()
    return chromadb.PersistentClient(path=config.path)


def _ids(keys: Sequence[Key]) -> list[str]:
    """The Chroma ids specdraft writes for rows ``keys``: zero-padded, so string order = row order."""
    return [f"{int(key):0{KEY_WIDTH}d}" for key in keys]


def _names(client: Any) -> list[str]:
    return [getattr(c, "name", c) for c in client.list_collections()]


def open_backend(config: StoreConfig) -> "ChromaBackend":
    """The collection ``config.collection`` (CollectionNotFoundError when it does not exist)."""
    client = _client(config)
    if config.collection not in _names(client):
        raise CollectionNotFoundError(
            f"no collection {config.collection!r} in the chroma store at {config.path} "
            f"(collections: {', '.join(_names(client)) or 'none'})"
        )
    return ChromaBackend(client, client.get_collection(config.collection, embedding_function=None), config)


def create_backend(config: StoreConfig, dim: int, overwrite: bool) -> "ChromaBackend":
    """A new, empty collection (CollectionExistsError when one exists, unless ``overwrite``)."""
    client = _client(config)
    if config.collection in _names(client):
        if not overwrite:
            raise CollectionExistsError(f"{config.describe()} already exists (overwrite to replace it)")
        client.delete_collection(config.collection)
    ef = max(SEARCH_EF, config.dense.candidates)
    collection = client.create_collection(
        config.collection,
        configuration={"hnsw": {"space": "ip", "ef_search": ef, "ef_construction": ef}},
        embedding_function=None,
    )
    return ChromaBackend(client, collection, config)


class ChromaBackend:
    """A Chroma collection as a ``StoreBackend``."""

    name = "chroma"
    exact = False

    def __init__(self, client: Any, collection: Any, config: StoreConfig) -> None:
        self.client = client
        self.collection = collection
        self.config = config

    @property
    def dim(self) -> int:
        sample = self.collection.get(limit=1, include=["embeddings"])
        if not len(sample["ids"]):
            dim = getattr(self.collection, "dimension", None)
            if dim is None:
                raise StoreError(f"{self.config.describe()} holds no records")
            return int(dim)
        return int(np.asarray(sample["embeddings"][0]).shape[-1])

    def records(self) -> Iterator[Record]:
        field = self.config.text_field
        where = self.config.describe()
        for offset in range(0, self.collection.count(), _PAGE):
            page = self.collection.get(limit=_PAGE, offset=offset, include=["documents", "metadatas"])
            for key, document, metadata in zip(page["ids"], page["documents"], page["metadatas"]):
                payload = dict(metadata or {})
                text = document if field is None else payload.pop(field, None)
                yield record_from(key, text, payload, where)

    def nearest(self, vectors: np.ndarray, n: int) -> list[list[tuple[Key, np.ndarray]]]:
        found = self.collection.query(query_embeddings=np.asarray(vectors), n_results=n, include=["embeddings"])
        return [list(zip(ids, embeddings)) for ids, embeddings in zip(found["ids"], found["embeddings"])]

    def vectors(self, keys: Sequence[Key]) -> list[np.ndarray]:
        got = self.collection.get(ids=[str(key) for key in keys], include=["embeddings"])
        by_key = dict(zip(got["ids"], got["embeddings"]))
        return [np.asarray(by_key[str(key)], dtype=np.float32) for key in keys]

    def write(self, keys: Sequence[Key], chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        ids = _ids(keys)
        field = self.config.text_field
        for start in range(0, len(ids), _PAGE):
            part = slice(start, start + _PAGE)
            metadatas: list[dict[str, Any]] = [payload_of(chunk) for chunk in chunks[part]]
            if field is not None:
                for metadata, chunk in zip(metadatas, chunks[part]):
                    metadata[field] = chunk.text
            self.collection.add(
                ids=ids[part],
                embeddings=np.asarray(vectors[part], dtype=np.float32),
                documents=None if field is not None else [chunk.text for chunk in chunks[part]],
                metadatas=metadatas,
            )

    def delete(self, keys: Sequence[Key]) -> None:
        ids = _ids(keys)
        for start in range(0, len(ids), _PAGE):
            self.collection.delete(ids=ids[start : start + _PAGE])

    def drop(self) -> None:
        self.client.delete_collection(self.config.collection)

    def close(self) -> None:
        pass  # chromadb keeps one shared system per path; nothing to release per adapter

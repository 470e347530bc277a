"""Qdrant's local mode (``qdrant-client``, the ``qdrant`` extra): ``QdrantClient(path=...)`` or ``":memory:"``.

Exact: local mode scores every point (a brute-force search; it warns that search parameters such
as ``exact`` have no effect there, so none are sent), so the adapter's answers are the exact top
``k``. A record's text is the payload field ``text_field`` (default ``"text"``); keys are the point
ids (specdraft writes the rows); ``vector_field`` names a named vector (None: the collection's
unnamed one). Collections specdraft builds use the dot-product distance over unit vectors. A local
folder is locked by one client at a time (Qdrant's rule): close the retriever before opening the
folder again in the same process.
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
from .config import MEMORY, StoreConfig

CLIENTS = ("qdrant_client",)  # the modules its extra installs (imported when a store is opened)

__all__ = ["open_backend", "create_backend", "QdrantBackend"]

DEFAULT_TEXT_FIELD = "text"
_PAGE = 1000  # points read or written per call


def _client(config: StoreConfig) -> Any:
    qdrant_client = import_client("qdrant_client", "qdrant")
    if config.in_memory:
        return qdrant_client.QdrantClient(location=MEMORY)
    return qdrant_client.QdrantClient(path=config.path)


def open_backend(config: StoreConfig) -> "QdrantBackend":
    """The collection ``config.collection`` (CollectionNotFoundError when it does not exist)."""
    client = _client(config)
    if not client.collection_exists(config.collection):
        names = ", ".join(c.name for c in client.get_collections().collections) or "none"
        client.close()
        raise CollectionNotFoundError(
            f"no collection {config.collection!r} in the qdrant store at {config.path} (collections: {names})"
        )
    return QdrantBackend(client, config)


def create_backend(config: StoreConfig, dim: int, overwrite: bool) -> "QdrantBackend":
    """A new, empty collection (CollectionExistsError when one exists, unless ``overwrite``)."""
    from qdrant_client import models

    client = _client(config)
    if client.collection_exists(config.collection):
        if not overwrite:
            client.close()
            raise CollectionExistsError(f"{config.describe()} already exists (overwrite to replace it)")
        client.delete_collection(config.collection)
    params = models.VectorParams(size=dim, distance=models.Distance.DOT)
    vectors = params if config.vector_field is None else {config.vector_field: params}
    client.create_collection(config.collection, vectors_config=vectors)
    return QdrantBackend(client, config)


class QdrantBackend:
    """A Qdrant collection as a ``StoreBackend``."""

    name = "qdrant"
    exact = True

    def __init__(self, client: Any, config: StoreConfig) -> None:
        from qdrant_client import models

        self.models = models
        self.client = client
        self.config = config
        self.text_field = config.text_field or DEFAULT_TEXT_FIELD

    @property
    def dim(self) -> int:
        vectors = self.client.get_collection(self.config.collection).config.params.vectors
        name = self.config.vector_field
        if isinstance(vectors, dict):
            if name not in vectors:
                raise StoreError(
                    f"vector_field: {self.config.describe()} has the named vectors {', '.join(vectors)}; name one"
                )
            return int(vectors[name].size)
        if name is not None:
            raise StoreError(f"vector_field: {self.config.describe()} has one unnamed vector, not {name!r}")
        return int(vectors.size)

    def records(self) -> Iterator[Record]:
        where = self.config.describe()
        offset = None
        while True:
            points, offset = self.client.scroll(
                self.config.collection, limit=_PAGE, offset=offset, with_payload=True, with_vectors=False
            )
            for point in points:
                payload = dict(point.payload or {})
                yield record_from(point.id, payload.pop(self.text_field, None), payload, where)
            if offset is None:
                return

    def _vector(self, point: Any) -> np.ndarray:
        vector = point.vector
        if isinstance(vector, dict):
            vector = vector[self.config.vector_field]
        return np.asarray(vector, dtype=np.float32)

    def nearest(self, vectors: np.ndarray, n: int) -> list[list[tuple[Key, np.ndarray]]]:
        requests = [
            self.models.QueryRequest(
                query=vector.tolist(),
                using=self.config.vector_field,
                limit=n,
                with_payload=False,
                with_vector=[self.config.vector_field] if self.config.vector_field else True,
            )
            for vector in vectors
        ]
        answers = self.client.query_batch_points(self.config.collection, requests=requests)
        return [[(point.id, self._vector(point)) for point in answer.points] for answer in answers]

    def vectors(self, keys: Sequence[Key]) -> list[np.ndarray]:
        with_vectors = [self.config.vector_field] if self.config.vector_field else True
        points = self.client.retrieve(self.config.collection, ids=list(keys), with_vectors=with_vectors)
        by_key = {point.id: self._vector(point) for point in points}
        return [by_key[key] for key in keys]

    def write(self, keys: Sequence[Key], chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        name = self.config.vector_field
        for start in range(0, len(keys), _PAGE):
            points = [
                self.models.PointStruct(
                    id=int(key),
                    vector=vector.tolist() if name is None else {name: vector.tolist()},
                    payload={self.text_field: chunk.text, **payload_of(chunk)},
                )
                for key, chunk, vector in zip(
                    keys[start : start + _PAGE], chunks[start : start + _PAGE], vectors[start : start + _PAGE]
                )
            ]
            self.client.upsert(self.config.collection, points=points, wait=True)

    def delete(self, keys: Sequence[Key]) -> None:
        for start in range(0, len(keys), _PAGE):
            selector = self.models.PointIdsList(points=[int(key) for key in keys[start : start + _PAGE]])
            self.client.delete(self.config.collection, points_selector=selector, wait=True)

    def drop(self) -> None:
        self.client.delete_collection(self.config.collection)

    def close(self) -> None:
        self.client.close()

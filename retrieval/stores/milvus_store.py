"""Milvus Lite (``pymilvus`` + ``milvus-lite``, the ``milvus`` extra): a local database file (``*.db``).

Exact: Milvus Lite searches with a flat (brute-force) index whatever index type a collection
names, so the adapter's answers are the exact top ``k``. A record's text is the field
``text_field`` (default ``"text"``; a dynamic field is fine), its vector the field
``vector_field`` (default: the collection's one float vector field), its key the primary key;
the other scalar fields are its payload. Collections specdraft builds use the quick set-up (int64
primary key ``id`` = the row, a ``vector`` field, inner product, dynamic fields for the text,
``chunk_id``, ``doc_id`` and ``metadata``).
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

CLIENTS = ("pymilvus", "milvus_lite")  # the modules its extra installs (imported when a store is opened)

__all__ = ["open_backend", "create_backend", "MilvusBackend"]

DEFAULT_TEXT_FIELD = "text"
DEFAULT_VECTOR_FIELD = "vector"
_PAGE = 1000  # records read or written per call


def _client(config: StoreConfig) -> Any:
    pymilvus, _ = (import_client(name, "milvus") for name in CLIENTS)
    return pymilvus.MilvusClient(config.path)


def open_backend(config: StoreConfig) -> "MilvusBackend":
    """The collection ``config.collection`` (CollectionNotFoundError when it does not exist)."""
    client = _client(config)
    if not client.has_collection(config.collection):
        names = ", ".join(client.list_collections()) or "none"
        client.close()
        raise CollectionNotFoundError(
            f"no collection {config.collection!r} in the milvus store at {config.path} (collections: {names})"
        )
    client.load_collection(config.collection)
    return MilvusBackend(client, config)


def create_backend(config: StoreConfig, dim: int, overwrite: bool) -> "MilvusBackend":
    """A new, empty collection (CollectionExistsError when one exists, unless ``overwrite``)."""
    client = _client(config)
    if client.has_collection(config.collection):
        if not overwrite:
            client.close()
            raise CollectionExistsError(f"{config.describe()} already exists (overwrite to replace it)")
        client.drop_collection(config.collection)
    client.create_collection(
        config.collection,
        dimension=dim,
        primary_field_name="id",
        id_type="int",
        vector_field_name=config.vector_field or DEFAULT_VECTOR_FIELD,
        metric_type="IP",
        auto_id=False,
        enable_dynamic_field=True,
    )
    return MilvusBackend(client, config)


class MilvusBackend:
    """A Milvus Lite collection as a ``StoreBackend``."""

    name = "milvus"
    exact = True

    def __init__(self, client: Any, config: StoreConfig) -> None:
        from pymilvus import DataType

        self.client = client
        self.config = config
        self.text_field = config.text_field or DEFAULT_TEXT_FIELD
        fields = client.describe_collection(config.collection)["fields"]
        self.key_field = next(field["name"] for field in fields if field.get("is_primary"))
        vectors = {field["name"]: field for field in fields if field["type"] == DataType.FLOAT_VECTOR}
        name = config.vector_field or (next(iter(vectors)) if len(vectors) == 1 else DEFAULT_VECTOR_FIELD)
        if name not in vectors:
            raise StoreError(
                f"vector_field: {config.describe()} has no float vector field {name!r} "
                f"(its float vector fields: {', '.join(vectors) or 'none'})"
            )
        self.vector_field = name
        self._dim = int(vectors[name]["params"]["dim"])

    @property
    def dim(self) -> int:
        return self._dim

    def records(self) -> Iterator[Record]:
        where = self.config.describe()
        iterator = self.client.query_iterator(self.config.collection, batch_size=_PAGE, filter="", output_fields=["*"])
        try:
            while batch := iterator.next():
                for row in batch:
                    row = dict(row)
                    row.pop(self.vector_field, None)
                    key = row.pop(self.key_field)
                    yield record_from(key, row.pop(self.text_field, None), row, where)
        finally:
            iterator.close()

    def nearest(self, vectors: np.ndarray, n: int) -> list[list[tuple[Key, np.ndarray]]]:
        found = self.client.search(
            self.config.collection,
            data=np.asarray(vectors, dtype=np.float32).tolist(),
            limit=n,
            output_fields=[self.vector_field],
            anns_field=self.vector_field,
        )
        return [
            [(hit["id"], np.asarray(hit["entity"][self.vector_field], dtype=np.float32)) for hit in hits]
            for hits in found
        ]

    def vectors(self, keys: Sequence[Key]) -> list[np.ndarray]:
        rows = self.client.get(self.config.collection, ids=list(keys), output_fields=[self.vector_field])
        by_key = {row[self.key_field]: np.asarray(row[self.vector_field], dtype=np.float32) for row in rows}
        return [by_key[key] for key in keys]

    def write(self, keys: Sequence[Key], chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        for start in range(0, len(keys), _PAGE):
            rows = [
                {
                    "id": int(key),
                    self.vector_field: np.asarray(vector, dtype=np.float32).tolist(),
                    self.text_field: chunk.text,
                    **payload_of(chunk),
                }
                for key, chunk, vector in zip(
                    keys[start : start + _PAGE], chunks[start : start + _PAGE], vectors[start : start + _PAGE]
                )
            ]
            self.client.insert(self.config.collection, rows)

    def delete(self, keys: Sequence[Key]) -> None:
        for start in range(0, len(keys), _PAGE):
            self.client.delete(self.config.collection, ids=[int(key) for key in keys[start : start + _PAGE]])

    def drop(self) -> None:
        self.client.drop_collection(self.config.collection)

    def close(self) -> None:
        self.client.close()

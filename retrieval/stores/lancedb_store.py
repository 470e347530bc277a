"""LanceDB (``lancedb``, the ``lancedb`` extra): a database folder, or ``":memory:"``.

Exact: every search bypasses any vector index the table has (``bypass_vector_index``: a flat scan),
so the adapter's answers are the exact top ``k``. A record's text is the column ``text_field``
(default ``"text"``), its vector the column ``vector_field`` (default ``"vector"``), its key the
column ``ID_COLUMN`` (``"id"``: a table without one cannot be opened; specdraft writes the rows
there); the other columns are its payload. Tables specdraft builds hold ``id``, ``text``,
``chunk_id``, ``doc_id``, ``metadata`` and ``vector`` (fixed-size float32 lists).
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

import numpy as np

from ..chunker import Chunk
from .base import (
    CHUNK_ID,
    DOC_ID,
    METADATA,
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

CLIENTS = ("lancedb",)  # the modules its extra installs (imported when a store is opened)

__all__ = ["open_backend", "create_backend", "LanceDBBackend"]

ID_COLUMN = "id"
DEFAULT_TEXT_FIELD = "text"
DEFAULT_VECTOR_FIELD = "vector"
MEMORY_URI = "memory://"
DISTANCE = "_distance"  # the column a LanceDB vector search adds
QUERY_INDEX = "query_index"  # the column a search of several vectors adds: which vector a row answers
_PAGE = 10000  # rows written per call


def _connect(config: StoreConfig) -> Any:
    lancedb = import_client("lancedb", "lancedb")
    return lancedb.connect(MEMORY_URI if config.in_memory else config.path)


def _tables(db: Any) -> list[str]:
    return list(db.list_tables().tables)


def open_backend(config: StoreConfig) -> "LanceDBBackend":
    """The table ``config.collection`` (CollectionNotFoundError when it does not exist)."""
    db = _connect(config)
    if config.collection not in _tables(db):
        raise CollectionNotFoundError(
            f"no table {config.collection!r} in the lancedb store at {config.path} "
            f"(tables: {', '.join(_tables(db)) or 'none'})"
        )
    return LanceDBBackend(db, db.open_table(config.collection), config)


def create_backend(config: StoreConfig, dim: int, overwrite: bool) -> "LanceDBBackend":
    """A new, empty table (CollectionExistsError when one exists, unless ``overwrite``)."""
    import pyarrow as pa

    db = _connect(config)
    if config.collection in _tables(db):
        if not overwrite:
            raise CollectionExistsError(f"{config.describe()} already exists (overwrite to replace it)")
        db.drop_table(config.collection)
    text = config.text_field or DEFAULT_TEXT_FIELD
    schema = pa.schema(
        [pa.field(ID_COLUMN, pa.int64()), pa.field(text, pa.string())]
        + [pa.field(name, pa.string()) for name in (CHUNK_ID, DOC_ID, METADATA)]
        + [pa.field(config.vector_field or DEFAULT_VECTOR_FIELD, pa.list_(pa.float32(), dim))]
    )
    return LanceDBBackend(db, db.create_table(config.collection, schema=schema), config)


class LanceDBBackend:
    """A LanceDB table as a ``StoreBackend``."""

    name = "lancedb"
    exact = True

    def __init__(self, db: Any, table: Any, config: StoreConfig) -> None:
        self.db = db
        self.table = table
        self.config = config
        self.text_field = config.text_field or DEFAULT_TEXT_FIELD
        self.vector_field = config.vector_field or DEFAULT_VECTOR_FIELD
        schema = table.schema
        for name, what in ((ID_COLUMN, "id"), (self.text_field, "text_field"), (self.vector_field, "vector_field")):
            if name not in schema.names:
                raise StoreError(
                    f"{what}: {config.describe()} has no column {name!r} (columns: {', '.join(schema.names)})"
                )
        vector_type = schema.field(self.vector_field).type
        self._dim = int(getattr(vector_type, "list_size", -1))
        if self._dim < 1:
            raise StoreError(f"vector_field: column {self.vector_field!r} is not a fixed-size vector ({vector_type})")

    @property
    def dim(self) -> int:
        return self._dim

    def records(self) -> Iterator[Record]:
        where = self.config.describe()
        columns = [name for name in self.table.schema.names if name != self.vector_field]
        for row in self.table.to_arrow().select(columns).to_pylist():
            key = row.pop(ID_COLUMN)
            yield record_from(key, row.pop(self.text_field, None), row, where)

    def _query(self, vector: np.ndarray, n: int) -> Any:
        """The flat search of one vector (``[dim]``) or of several (``[nq, dim]``: ``n`` rows each)."""
        return (
            self.table.search(vector, vector_column_name=self.vector_field)
            .metric("dot")
            .bypass_vector_index()
            .limit(n)
            .select([ID_COLUMN, self.vector_field, DISTANCE])  # named, or lance warns that it adds it
        )

    def nearest(self, vectors: np.ndarray, n: int) -> list[list[tuple[Key, np.ndarray]]]:
        """One search call for the whole batch: LanceDB answers several query vectors with one scan
        of the table (a batch of 4 costs about 1.5 one-query searches at a million records), which
        is what makes a batched verification of speculative retrieval cheap."""
        vectors = np.asarray(vectors, dtype=np.float32)
        single = len(vectors) == 1  # a search of one vector answers rows without QUERY_INDEX
        out: list[list[tuple[Key, np.ndarray]]] = [[] for _ in vectors]
        for row in self._query(vectors[0] if single else vectors, n).to_list():
            hit = (row[ID_COLUMN], np.asarray(row[self.vector_field], dtype=np.float32))
            out[0 if single else row[QUERY_INDEX]].append(hit)
        return out

    def vectors(self, keys: Sequence[Key]) -> list[np.ndarray]:
        listed = ", ".join(str(key) if isinstance(key, int) else "'" + key.replace("'", "''") + "'" for key in keys)
        rows = (
            self.table.search()
            .where(f"{ID_COLUMN} IN ({listed})")
            .select([ID_COLUMN, self.vector_field])
            .limit(len(keys))
            .to_list()
        )
        by_key = {row[ID_COLUMN]: np.asarray(row[self.vector_field], dtype=np.float32) for row in rows}
        return [by_key[key] for key in keys]

    def write(self, keys: Sequence[Key], chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        import pyarrow as pa

        for start in range(0, len(keys), _PAGE):
            part = slice(start, start + _PAGE)
            payloads = [payload_of(chunk) for chunk in chunks[part]]
            columns: dict[str, Any] = {
                ID_COLUMN: pa.array([int(key) for key in keys[part]], pa.int64()),
                self.text_field: [chunk.text for chunk in chunks[part]],
            }
            for name in (CHUNK_ID, DOC_ID, METADATA):
                columns[name] = [payload[name] for payload in payloads]
            flat = pa.array(np.ascontiguousarray(vectors[part], dtype=np.float32).reshape(-1))
            columns[self.vector_field] = pa.FixedSizeListArray.from_arrays(flat, self._dim)
            self.table.add(pa.table(columns, schema=self.table.schema))

    def delete(self, keys: Sequence[Key]) -> None:
        for start in range(0, len(keys), _PAGE):
            listed = ", ".join(str(int(key)) for key in keys[start : start + _PAGE])
            self.table.delete(f"{ID_COLUMN} IN ({listed})")

    def drop(self) -> None:
        self.db.drop_table(self.config.collection)

    def close(self) -> None:
        pass  # a LanceDB connection holds no lock or server

"""``StoreRetriever``: a user's vector store behind the one retriever contract (``retrieval.retriever``).

One class serves every store; a store module (``chroma``, ``lancedb``, ``qdrant``, ``milvus``)
supplies only a ``StoreBackend``: list the records, find the ``n`` nearest records of a batch of
query vectors (with their vectors), fetch records' vectors, and write a new collection.

Words used here:

- **key**: a record's id in the store (an int or a string);
- **row**: a record's position in the adapter's ``Collection``: records are numbered by key,
  ascending (ints numerically, strings as text; ints first). A collection specdraft builds uses
  the rows as keys (zero-padded strings where the store takes only strings), so its rows are the
  order the chunks were added in, as a ``DocumentIndex``'s are.

What a search answers (``ScoringRetriever``, canonical): each query is embedded on its own with
our embedder (``prepare``: one unit vector per query, so ``PreparedRetriever``: iterative RAG
embeds a query once for the cache and the verification); the store is asked for its nearest
``max(dense.candidates, k)`` records; they are **rescored** with ``score``'s function, the inner
product of the query's vector and the vector the store holds (the cosine for the unit vectors
specdraft writes) computed in float64 and rounded to float32, the precision of the vectors (and of
FAISS's scores: two records whose products differ only by rounding tie, and the lower row wins, as
in a ``DocumentIndex``), and ranked by (score descending, row ascending). So a query's answer
depends only on the query: not on the other queries of a batch, nor on ``k`` up to the candidate
count. When the ``k``-th score lies within ``dense.boundary_tolerance`` of the weakest candidate's
(the store's own order may have cut a tie there), the store is asked again for twice as many, up
to every record. On an exact store (``StoreBackend.exact``: a flat, brute-force search) the answer
is then the exact top ``k``. On an approximate store (Chroma's HNSW) the candidates are the best of
one graph search whose beam (``ef_search``) is wider than the candidate count, so asking for more
within the beam changes only where the list is cut; a true neighbour the graph misses is missed
here too.

Records' vectors are read with the search results and kept (by row), so the speculative cache's
``score`` of documents it got from searches costs no store call; other rows are fetched once.
Store calls are serialised per adapter (a verification on a worker thread and the answering
thread's scoring may use it at once).
"""

from __future__ import annotations

import importlib
import json
import threading
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Iterable, Protocol, Sequence, Union

import numpy as np

from ..chunker import Chunk
from ..embedder import TextEmbedder, embed_each
from ..faiss_index import unit_rows
from ..retriever import Collection, Hit, check_docs, check_search, dot64, rank
from .config import EXTRAS, StoreConfig

__all__ = [
    "Key",
    "Record",
    "StoreBackend",
    "StoreError",
    "StoreNotInstalledError",
    "CollectionNotFoundError",
    "CollectionExistsError",
    "StoreRetriever",
    "import_client",
    "record_from",
    "payload_of",
    "sort_key",
]

Key = Union[int, str]
# payload fields a collection built by specdraft carries beside the text (and that opening one reads)
CHUNK_ID, DOC_ID, METADATA = "chunk_id", "doc_id", "metadata"


class StoreError(ValueError):
    """A store or collection that cannot be used as asked; the message says which and why."""


class StoreNotInstalledError(StoreError):
    """The store's client library is missing; the message names the extra to install."""


# the packages each extra installs, named in the error when one is missing
_PIP = {
    "chroma": "chromadb",
    "lancedb": "lancedb",
    "qdrant": "qdrant-client",
    "milvus": "pymilvus milvus-lite",
    "langchain": "langchain-core",
}


def import_client(module: str, extra: str) -> ModuleType:
    """``import module``, or ``StoreNotInstalledError`` naming the extra (and its packages) that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise StoreNotInstalledError(
            f"the {extra} adapter needs {_PIP[extra]} ({error}). Install it with:\n"
            f"    pip install 'specdraft[{EXTRAS[extra]}]'"
        ) from None


class CollectionNotFoundError(StoreError):
    """The named collection is not in the store."""


class CollectionExistsError(StoreError):
    """Building into a collection that already exists (without overwrite)."""


@dataclass(frozen=True)
class Record:
    """One record of a store as a document chunk: its key, text, chunk id, document id and metadata."""

    key: Key
    text: str
    chunk_id: str
    doc_id: str
    metadata: dict = field(default_factory=dict)


def sort_key(key: Key) -> tuple[bool, Any]:
    """The order of rows: int keys first, numerically, then string keys as text."""
    return (isinstance(key, str), key)


def record_from(key: Key, text: Any, payload: dict[str, Any], where: str) -> Record:
    """A record read from a store (the config module's rules): ``text`` must be a non-empty string
    (StoreError naming ``where`` and the key otherwise)."""
    if not isinstance(text, str) or not text.strip():
        raise StoreError(f"{where}: record {key!r} has no text ({text!r}); set text_field to the field holding it")
    chunk_id = payload.get(CHUNK_ID)
    chunk_id = chunk_id if isinstance(chunk_id, str) and chunk_id else str(key)
    doc_id = payload.get(DOC_ID)
    doc_id = doc_id if isinstance(doc_id, str) and doc_id else chunk_id
    if METADATA in payload:
        metadata = payload[METADATA]
        if isinstance(metadata, str):
            try:
                metadata = json.loads(metadata)
            except ValueError:
                metadata = {METADATA: metadata}
        metadata = metadata if isinstance(metadata, dict) else {METADATA: metadata}
    else:
        metadata = {name: value for name, value in payload.items() if name not in (CHUNK_ID, DOC_ID)}
    return Record(key, text, chunk_id, doc_id, metadata)


def payload_of(chunk: Chunk) -> dict[str, str]:
    """What specdraft writes beside a chunk's text and vector: its chunk id, document id and
    metadata (as JSON text: stores such as Chroma take only flat values)."""
    return {CHUNK_ID: chunk.id, DOC_ID: chunk.doc_id, METADATA: json.dumps(chunk.metadata, ensure_ascii=False)}


class StoreBackend(Protocol):
    """What a store module supplies (module docstring). ``exact``: whether ``nearest`` searches
    exhaustively (flat); ``dim``: the dimension of the collection's vectors."""

    name: str
    exact: bool
    dim: int

    def records(self) -> Iterable[Record]:
        """Every record of the collection (any order)."""
        ...

    def nearest(self, vectors: np.ndarray, n: int) -> list[list[tuple[Key, np.ndarray]]]:
        """For each query vector (``[nq, dim]`` float32) the keys of its (up to) ``n`` nearest
        records and their vectors (``[dim]``)."""
        ...

    def vectors(self, keys: Sequence[Key]) -> list[np.ndarray]:
        """The vector of each key, in the order given."""
        ...

    def write(self, keys: Sequence[Key], chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        """Add records (a collection being built): key, chunk (text and ``payload_of``), vector."""
        ...

    def delete(self, keys: Sequence[Key]) -> None:
        """Remove the records of these keys (an add that failed removes what it wrote)."""
        ...

    def drop(self) -> None:
        """Delete the collection (a build that failed removes what it wrote)."""
        ...

    def close(self) -> None:
        """Release the client (a local store's folder lock)."""
        ...


def check_dimension(config: StoreConfig, backend: StoreBackend, embedder: TextEmbedder, action: str) -> None:
    """StoreError when ``embedder`` gives vectors of another dimension than the collection holds;
    the message says to ``action`` with the embedding model that made them."""
    if embedder.dim != backend.dim:
        raise StoreError(
            f"{config.describe()} holds {backend.dim}-dimensional vectors; the embedder {embedder.name!r} gives "
            f"{embedder.dim}: {action} with the embedding model that made them"
        )


def _scores(vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    """float64 ``[n]``: each row's inner product with ``query`` in float64, rounded to float32
    (module docstring)."""
    return dot64(vectors, query).astype(np.float32).astype(np.float64)


class StoreRetriever:
    """A collection of a vector store as a ``PreparedRetriever`` (module docstring).

    ``collection``: its records as a ``Collection`` (row ``i`` = the ``i``-th key in order), what
    ``IterativeRAG`` takes beside the retriever. ``exact``: whether searches are exact (the
    store's search is flat). StoreError when the collection is empty or its vectors have another
    dimension than the embedder's."""

    def __init__(self, backend: StoreBackend, embedder: TextEmbedder, config: StoreConfig) -> None:
        self.backend = backend
        self.embedder = embedder
        self.config = config
        self.exact = backend.exact
        records = sorted(backend.records(), key=lambda record: sort_key(record.key))
        if not records:
            raise StoreError(f"{config.describe()} holds no documents")
        check_dimension(config, backend, embedder, "open it")
        self.collection = Collection.from_chunks(
            [Chunk(record.chunk_id, record.doc_id, record.text, record.metadata) for record in records]
        )
        self._keys = [record.key for record in records]
        self._rows = {record.key: row for row, record in enumerate(records)}
        self._vectors: dict[int, np.ndarray] = {}  # row -> the store's vector [dim], as read
        self._lock = threading.Lock()  # serialises store calls and the vector cache

    @property
    def name(self) -> str:
        """The store's name ("chroma", "lancedb", "qdrant", "milvus")."""
        return self.backend.name

    def __len__(self) -> int:
        return len(self._keys)

    def __repr__(self) -> str:
        return f"StoreRetriever({self.config.describe()}, records={len(self)}, exact={self.exact})"

    def close(self) -> None:
        """Release the store's client (a local store's folder lock)."""
        with self._lock:
            self.backend.close()

    # -- the retriever contract ----------------------------------------------------------------

    def prepare(self, queries: Sequence[str]) -> list[np.ndarray]:
        """Each query's float32 unit vector, embedded alone (``embedder.embed_each``)."""
        queries = check_search(queries, 1)
        return list(unit_rows(embed_each(self.embedder, queries, self.backend.dim)))

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        """Each query's best ``k`` records (module docstring)."""
        queries = check_search(queries, k)
        return self.search_prepared(self.prepare(queries), k)

    def score(self, query: str, docs: Sequence[int]) -> np.ndarray:
        """float64 ``[len(docs)]``: the scores ``search`` ranks the rows ``docs`` by."""
        return self.score_prepared(self.prepare([query])[0], docs)

    def search_prepared(self, prepared: Sequence[np.ndarray], k: int) -> list[list[Hit]]:
        """``search`` of the queries whose ``prepare``d vectors these are: ONE store call for the batch."""
        check_search([], k)
        if not len(prepared):
            return []
        vectors = np.ascontiguousarray(np.stack([np.asarray(v, dtype=np.float32).reshape(-1) for v in prepared]))
        if vectors.shape[1] != self.backend.dim:
            raise ValueError(f"query vectors have {vectors.shape[1]} dimensions, the store's {self.backend.dim}")
        wanted = min(max(self.config.dense.candidates, k), len(self))
        found = self._nearest(vectors, wanted)
        return [self._ranked(found[i], vectors[i], k, wanted) for i in range(len(vectors))]

    def score_prepared(self, vector: np.ndarray, docs: Sequence[int]) -> np.ndarray:
        """``score`` of the query whose ``prepare``d vector this is."""
        rows = check_docs(docs, len(self))
        return _scores(self._row_vectors(rows), np.asarray(vector, dtype=np.float32).reshape(-1))

    # -- the work ------------------------------------------------------------------------------

    def _nearest(self, vectors: np.ndarray, n: int) -> list[list[tuple[int, np.ndarray]]]:
        """The store's ``n`` nearest records of each query as (row, vector) pairs; keeps the vectors."""
        with self._lock:
            found = self.backend.nearest(vectors, n)
            if len(found) != len(vectors):
                raise StoreError(f"{self.config.describe()} answered {len(found)} of {len(vectors)} queries")
            rows = []
            for hits in found:
                pairs = []
                for key, vector in hits:
                    row = self._rows.get(key)
                    if row is None:  # written after the adapter was opened: not in its collection
                        continue
                    vector = np.asarray(vector, dtype=np.float32).reshape(-1)
                    self._vectors.setdefault(row, vector)
                    pairs.append((row, vector))
                rows.append(pairs)
            return rows

    def _ranked(self, found: list[tuple[int, np.ndarray]], query: np.ndarray, k: int, wanted: int) -> list[Hit]:
        while True:
            rows = np.array([row for row, _ in found], dtype=np.int64)
            scores = _scores(np.stack([vector for _, vector in found]), query) if found else np.zeros(0)
            best = rank(rows, scores, k)
            if wanted >= len(self) or not self._at_boundary(best, scores, k):
                return self.collection.hits(best)
            wanted = min(2 * wanted, len(self))
            found = self._nearest(query[None, :], wanted)[0]

    def _at_boundary(self, best: list[tuple[int, float]], scores: np.ndarray, k: int) -> bool:
        """Whether the store's float32 order may have cut a tie at the ``k``-th place."""
        if len(best) < k:
            return True
        return best[-1][1] - float(scores.min()) <= self.config.dense.boundary_tolerance

    def _row_vectors(self, rows: np.ndarray) -> np.ndarray:
        """``[len(rows), dim]``: the store's vectors of ``rows``, fetching those not read yet."""
        with self._lock:
            missing = sorted({int(row) for row in rows} - self._vectors.keys())
            if missing:
                fetched = self.backend.vectors([self._keys[row] for row in missing])
                for row, vector in zip(missing, fetched):
                    self._vectors[row] = np.asarray(vector, dtype=np.float32).reshape(-1)
            if not len(rows):
                return np.zeros((0, self.backend.dim), dtype=np.float32)
            return np.stack([self._vectors[int(row)] for row in rows])

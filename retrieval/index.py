"""A persisted FAISS index of document chunks: add documents, search top-k, save and load atomically.

Words used here:

- **document**: `{"id": str, "text": str, "metadata"?: dict}` as given to `DocumentIndex.add` (other
  keys are ignored; put what should be kept in `metadata`).
- **chunk**: a window of about `IndexConfig.chunk_words` words of one document, overlapping the previous
  window by at most `chunk_overlap` words. Its id is `"<document id>#<n>"` (n counts from 0 within the
  document), its text an exact slice of the document's text, and it carries the document's metadata.
  Chunks are what is embedded and searched.
- **row**: a chunk's position in the FAISS index, which is also its position in the chunk store.

Scores are inner products of unit vectors, i.e. cosine similarities (higher is closer).

Index kinds (`IndexConfig.kind`):

- `"flat"` (`IndexFlatIP`): exact search; the default.
- `"ivf"` (`IndexIVFFlat`, inner product): trained on the first batch of vectors added, which must
  hold at least `IVF_MIN_POINTS_PER_LIST * nlist` chunks; with fewer the index stays flat (exact) and
  `notes` says so. Later batches are added without retraining. Searches probe `nprobe` lists.
- `"hnsw"` (`IndexHNSWFlat`, inner product): a graph with `hnsw_m` links per node, searched with
  `ef_search` candidates; no training.

With a GPU visible to faiss (`faiss.get_num_gpus() > 0`, the `gpu` extra) and `use_gpu` not False,
flat and IVF indexes are also copied to all GPUs and searched there (faiss has no GPU HNSW); the CPU
index stays the one that is saved.

Persistence (`save` / `load`), crash-safe: everything is written into a fresh temporary folder next to
the target (`index.faiss`, `chunks.jsonl`, then `manifest.json` with the format version, the embedding
model, the configuration, the counts and the sha256 of the other two files), each file and the folder
are fsynced, and then the folders are swapped by renames: the old folder is moved aside to
`.<name>.old`, the new one renamed into place, and the old one removed. At every instant either the
target or the aside folder holds a complete index, so a save killed at any point leaves the previous
index (or, once the second rename happened, the new one) loadable: `load` reads the aside folder when
the target is missing, and the next `save` finishes the recovery and removes leftovers. Saves hold an
exclusive `flock` on the parent folder and loads a shared one, so a load never sees a swap half done.

Searching: a `DocumentIndex` is a `Retriever` (`specdraft.retrieval.retriever`, the contract the RAG
pipeline retrieves through): `search(queries, k)` gives each query's hits, `Hit(doc, chunk, score)`
with `doc` the chunk's row; `search(query, k)` with one string gives that query's hits alone.
`collection()` and `vectors()` hand the chunks and their vectors, row for row, to the retrievers of
iterative RAG.

This module holds `DocumentIndex` and is the import path for every public name of the document index; the work is split
into modules with one job each: `chunker` (documents into chunks), `index_config` (`IndexConfig`), `faiss_index`
(building, tuning and GPU copies of FAISS indexes) and `index_store` (the folder layout, saving and checked reading).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, overload

import numpy as np

from .chunker import Chunk, InvalidDocumentError, chunk_documents, split_into_chunks, validate_documents
from .embedder import Embedder, EmbedderConfig, TextEmbedder
from .faiss_index import (
    IVF_MIN_POINTS_PER_LIST,
    FaissNotInstalledError,
    build_index,
    gpu_wanted,
    import_faiss,
    to_search_index,
    tune,
    unit_rows,
)
from .index_config import KINDS, IndexConfig
from .index_store import (
    FORMAT,
    FORMAT_VERSION,
    MANIFEST_FILE,
    CorruptIndexError,
    IndexNotFoundError,
    read_chunks,
    read_faiss,
    read_manifest,
    reading_folder,
    write_index_folder,
)
from .retriever import Collection, Hit

__all__ = [
    "KINDS",
    "FORMAT",
    "FORMAT_VERSION",
    "IVF_MIN_POINTS_PER_LIST",
    "IndexConfig",
    "Chunk",
    "Hit",
    "DocumentIndex",
    "InvalidDocumentError",
    "EmbedderMismatchError",
    "IndexNotFoundError",
    "CorruptIndexError",
    "FaissNotInstalledError",
    "split_into_chunks",
]


class EmbedderMismatchError(ValueError):
    """The index was built with another embedding model than the one it is loaded with."""


class DocumentIndex:
    """Chunks of documents, their vectors in FAISS, and the chunk store; see the module docstring.

    Not safe for concurrent `add` calls; searches do not change the index.
    """

    def __init__(self, config: IndexConfig | None = None, embedder: TextEmbedder | None = None) -> None:
        """An empty index (the same as `create`). The FAISS index is built on the first `add`."""
        self.config = config or IndexConfig()
        self.embedder: TextEmbedder = embedder if embedder is not None else Embedder()
        self._faiss = import_faiss()
        self._use_gpu = gpu_wanted(self._faiss, self.config.use_gpu)
        self._cpu_index: Any = None  # the saved index; None until the first add
        self._search_index: Any = None  # the CPU index or its GPU copy
        self._kind: str | None = None  # the kind actually built (an IVF can fall back to flat)
        self._dim: int | None = None
        self._chunks: list[Chunk] = []
        self._doc_ids: set[str] = set()
        self._notes: list[str] = []

    @classmethod
    def create(cls, config: IndexConfig | None = None, embedder: TextEmbedder | None = None) -> DocumentIndex:
        """An empty index chunking and indexing per `config`, embedding with `embedder` (default: the
        packaged all-MiniLM-L6-v2)."""
        return cls(config, embedder)

    # -- facts -------------------------------------------------------------------------------------

    def __len__(self) -> int:
        """Number of chunks (= vectors)."""
        return len(self._chunks)

    @property
    def name(self) -> str:
        """The `Retriever` name of a document index."""
        return "index"

    @property
    def documents(self) -> int:
        """Number of documents."""
        return len(self._doc_ids)

    @property
    def kind(self) -> str | None:
        """The FAISS index kind in use ("flat", "ivf", "hnsw"), None while empty."""
        return self._kind

    @property
    def notes(self) -> tuple[str, ...]:
        """Things a user should know about how the index was built (e.g. an IVF fallback)."""
        return tuple(self._notes)

    @property
    def on_gpu(self) -> bool:
        """Whether searches run on a GPU copy of the index."""
        return self._search_index is not None and self._search_index is not self._cpu_index

    def __contains__(self, doc_id: object) -> bool:
        """Whether a document with this id is in the index."""
        return doc_id in self._doc_ids

    def __repr__(self) -> str:
        return (
            f"DocumentIndex(kind={self._kind or self.config.kind!r}, documents={self.documents}, chunks={len(self)}, "
            f"embedder={self.embedder.name!r})"
        )

    # -- adding ------------------------------------------------------------------------------------

    def add(self, documents: Iterable[Mapping[str, Any]], *, progress: bool = False) -> int:
        """Chunk, embed and index `documents`; returns the number of chunks added.

        All documents are validated first (InvalidDocumentError, a ValueError naming the first bad
        document: not an object, id not a non-empty string, text missing, not a string or blank,
        metadata not a JSON object, an id repeated in the batch or already in the index); if any is
        bad, or embedding fails, the index is unchanged. progress: show a bar while embedding.
        """
        valid = validate_documents(list(documents), self._doc_ids)
        chunks = chunk_documents(valid, self.config.chunk_words, self.config.chunk_overlap)
        if not chunks:
            return 0
        vectors = self._embed([chunk.text for chunk in chunks], progress)  # [n_chunks, dim]
        if self._cpu_index is None or self._cpu_index.ntotal == 0:
            cpu_index, kind, notes = build_index(self._faiss, self.config, vectors)
            search_index = to_search_index(self._faiss, cpu_index, kind, self._use_gpu)
        else:
            cpu_index, kind, notes, search_index = self._cpu_index, self._kind, [], self._search_index
            cpu_index.add(vectors)
            if search_index is not cpu_index:
                search_index.add(vectors)
        self._cpu_index, self._search_index, self._kind, self._dim = cpu_index, search_index, kind, vectors.shape[1]
        self._notes.extend(notes)
        self._chunks.extend(chunks)
        self._doc_ids.update(doc_id for doc_id, _, _ in valid)
        return len(chunks)

    def _embed(self, texts: Sequence[str], progress: bool) -> np.ndarray:
        """Unit vectors `[len(texts), dim]`, checked against the index's dimension."""
        vectors = np.asarray(self.embedder.encode(texts, progress=progress))
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            raise ValueError(f"embedder {self.embedder.name!r} returned shape {vectors.shape} for {len(texts)} texts")
        if self._dim is not None and vectors.shape[1] != self._dim:
            raise ValueError(
                f"embedder {self.embedder.name!r} gives {vectors.shape[1]}-dimensional vectors; the index holds "
                f"{self._dim}"
            )
        return unit_rows(vectors)

    def collection(self) -> Collection:
        """The chunks as a `Collection` (row `i` = the chunk at row `i` of the FAISS index).
        ValueError when the index holds none."""
        if not self._chunks:
            raise ValueError("the index holds no documents")
        return Collection.from_chunks(self._chunks)

    def vectors(self) -> np.ndarray | None:
        """The chunks' unit vectors `[len(self), dim]` (float32, row for row), read back from FAISS;
        None when the index is empty or its kind keeps no vectors (IVF without a direct map)."""
        if self._cpu_index is None or self._cpu_index.ntotal != len(self._chunks):
            return None
        try:
            return np.ascontiguousarray(self._cpu_index.reconstruct_n(0, len(self._chunks)), dtype=np.float32)
        except RuntimeError:
            return None

    # -- searching ---------------------------------------------------------------------------------

    @overload
    def search(self, queries: str, k: int = 5) -> list[Hit]: ...

    @overload
    def search(self, queries: Sequence[str], k: int = 5) -> list[list[Hit]]: ...

    def search(self, queries: str | Sequence[str], k: int = 5) -> list[Hit] | list[list[Hit]]:
        """For each query the (at most) `k` chunks closest to it, best first (ties: earlier added
        first): the `Retriever` protocol's search (`search_batch`). One string: its hits alone."""
        if isinstance(queries, str):
            return self.search_batch([queries], k)[0]
        return self.search_batch(queries, k)

    def search_batch(self, queries: Sequence[str], k: int = 5) -> list[list[Hit]]:
        """`search` for each query, embedding and searching them together."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be an integer >= 1, got {k!r}")
        queries = list(queries)
        for query in queries:
            if not isinstance(query, str) or not query.strip():
                raise ValueError(f"a query must be a non-empty string, got {query!r}")
        if not queries:
            return []
        if not self._chunks:
            return [[] for _ in queries]
        vectors = self._embed(queries, progress=False)  # [n_queries, dim]
        scores, rows = self._search_index.search(vectors, min(k, len(self._chunks)))  # [n_queries, k] each
        results = []
        for query_scores, query_rows in zip(scores, rows):
            found = sorted((-float(score), int(row)) for score, row in zip(query_scores, query_rows) if row >= 0)
            results.append([Hit(row, self._chunks[row], -negative) for negative, row in found])
        return results

    # -- persistence -------------------------------------------------------------------------------

    def save(self, folder: str | os.PathLike[str]) -> Path:
        """Write the index to `folder` atomically (see the module docstring); returns its path.

        The folder's parent is created if needed; an existing index there is replaced (but a
        non-empty folder that is not a document index is not: ValueError)."""
        return write_index_folder(folder, self._manifest_base(), self._index_for_saving(), self._chunks)

    def _index_for_saving(self) -> Any:
        if self._cpu_index is not None:
            return self._cpu_index
        return self._faiss.IndexFlatIP(self.embedder.dim)  # an empty index still records its dimension

    def _manifest_base(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "embedder": {
                "name": self.embedder.name,
                "model": self.embedder.model_id if isinstance(self.embedder, Embedder) else None,
                "dim": self._dim if self._dim is not None else self.embedder.dim,
            },
            "config": self.config.persisted(),
            "index_kind": self._kind,
            "notes": list(self._notes),
            "counts": {"documents": self.documents, "chunks": len(self._chunks)},
        }

    @classmethod
    def load(
        cls, folder: str | os.PathLike[str], embedder: TextEmbedder | None = None, *, use_gpu: bool | None = None
    ) -> DocumentIndex:
        """The index saved in `folder` (or, after a save that crashed mid-swap, the previous one).

        embedder: defaults to the embedding model recorded in the manifest; one with another `name`
        raises EmbedderMismatchError, a ValueError ("index built with X, not Y"). Raises IndexNotFoundError when there
        is no index, CorruptIndexError when the folder is not a specdraft index, has an unsupported format
        version, or its files do not match the manifest's checksums and counts.
        """
        with reading_folder(Path(folder).absolute(), folder) as source:
            manifest = read_manifest(source, folder)
            built_with = manifest["embedder"]
            if embedder is None:
                if not built_with.get("model"):
                    raise ValueError(
                        f"index {folder} was built with the custom embedder {built_with['name']!r}: pass it to load"
                    )
                embedder = Embedder(EmbedderConfig(model=built_with["model"]))
            if embedder.name != built_with["name"]:
                raise EmbedderMismatchError(f"index {folder} was built with {built_with['name']}, not {embedder.name}")
            try:
                config = IndexConfig(**manifest["config"], use_gpu=use_gpu)
            except (TypeError, ValueError) as error:
                raise CorruptIndexError(f"{folder}: bad configuration in {MANIFEST_FILE}: {error}") from None
            index = cls(config, embedder)
            cpu_index = read_faiss(index._faiss, source, folder)
            chunks = read_chunks(source, folder)
        counts = manifest["counts"]
        if not (cpu_index.ntotal == len(chunks) == counts["chunks"]) or cpu_index.d != built_with["dim"]:
            raise CorruptIndexError(
                f"{folder}: the manifest says {counts['chunks']} chunks of dimension {built_with['dim']}, the files "
                f"hold {len(chunks)} chunks and {cpu_index.ntotal} vectors of dimension {cpu_index.d}"
            )
        doc_ids = {chunk.doc_id for chunk in chunks}
        if len(doc_ids) != counts["documents"]:
            raise CorruptIndexError(
                f"{folder}: the manifest says {counts['documents']} documents, the chunks have {len(doc_ids)}"
            )
        index._dim = cpu_index.d
        index._chunks, index._doc_ids, index._notes = chunks, doc_ids, list(manifest.get("notes", []))
        if chunks:
            if manifest["index_kind"] is None:
                raise CorruptIndexError(f"{folder}: {MANIFEST_FILE} has chunks but no index_kind")
            index._kind = manifest["index_kind"]
            tune(index._faiss, index.config, cpu_index, index._kind)
            index._cpu_index = cpu_index
            index._search_index = to_search_index(index._faiss, cpu_index, index._kind, index._use_gpu)
        return index

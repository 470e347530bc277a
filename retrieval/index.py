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
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import hashlib
import json
import os
import re
import secrets
import shutil
from collections.abc import Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .durable import fsync_folder
from .embedder import Embedder, EmbedderConfig, TextEmbedder

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
    "IndexNotFoundError",
    "CorruptIndexError",
    "FaissNotInstalledError",
    "split_into_chunks",
]

KINDS = ("flat", "ivf", "hnsw")
FORMAT = "specdraft.document-index"
FORMAT_VERSION = 1
# faiss's k-means wants at least 39 training points per centroid (it warns below that).
IVF_MIN_POINTS_PER_LIST = 39
_INDEX_FILE = "index.faiss"
_CHUNKS_FILE = "chunks.jsonl"
_MANIFEST_FILE = "manifest.json"
_HASH_BLOCK_BYTES = 1 << 20
_WORD = re.compile(r"\S+")
# A word that closes a sentence: ends in . ! ? or an ellipsis, possibly followed by closing quotes or brackets.
_SENTENCE_END = re.compile(r"[.!?\u2026][\"')\]\u00bb\u201d\u2019]*$")


class InvalidDocumentError(ValueError):
    """A document given to `add` is malformed. `position` is its index in the batch (from 0),
    `doc_id` its id when it has a usable one."""

    def __init__(self, position: int, doc_id: str | None, problem: str) -> None:
        self.position = position
        self.doc_id = doc_id
        self.problem = problem
        where = f"document {position}" + (f" (id {doc_id!r})" if doc_id is not None else "")
        super().__init__(f"{where}: {problem}")


class EmbedderMismatchError(ValueError):
    """The index was built with another embedding model than the one it is loaded with."""


class IndexNotFoundError(FileNotFoundError):
    """No document index at the given folder."""


class CorruptIndexError(ValueError):
    """The folder is not a specdraft document index, or its files do not match its manifest."""


class FaissNotInstalledError(RuntimeError):
    """faiss is missing; the message names the pip command."""


def _import_faiss() -> Any:
    try:
        import faiss
    except ImportError:
        raise FaissNotInstalledError(
            "the document index needs faiss. Install it with:\n    pip install faiss-cpu\n"
            "(or faiss-gpu-cu12 on a CUDA machine; the extras specdraft[cpu] / specdraft[gpu] do the same)"
        ) from None
    return faiss


@dataclass(frozen=True)
class IndexConfig:
    """How documents are chunked and which FAISS index holds their vectors.

    kind: "flat" (exact), "ivf" or "hnsw" (see the module docstring). chunk_words: words per chunk
    (at most). chunk_overlap: words a chunk repeats from the previous one (at most; < chunk_words).
    nlist, nprobe: IVF lists, and lists probed per search. hnsw_m, ef_search: HNSW links per node,
    and candidates kept while searching. use_gpu: None = use the GPU when faiss sees one; True =
    require one; False = CPU only. Not saved: chosen again on every load.
    """

    kind: str = "flat"
    chunk_words: int = 120
    chunk_overlap: int = 20
    nlist: int = 64
    hnsw_m: int = 32
    nprobe: int = 8
    ef_search: int = 64
    use_gpu: bool | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        for name, minimum in (("chunk_words", 1), ("chunk_overlap", 0), ("nlist", 1), ("hnsw_m", 2), ("nprobe", 1), ("ef_search", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
        if self.chunk_overlap >= self.chunk_words:
            raise ValueError(f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_words ({self.chunk_words})")
        if self.use_gpu is not None and not isinstance(self.use_gpu, bool):
            raise ValueError(f"use_gpu must be None, True or False, got {self.use_gpu!r}")

    def persisted(self) -> dict[str, Any]:
        """The fields stored in a manifest (all but `use_gpu`)."""
        values = asdict(self)
        del values["use_gpu"]
        return values


@dataclass(frozen=True)
class Chunk:
    """A searchable window of a document: id `"<doc_id>#<n>"`, an exact slice of the document's text,
    and the document's metadata."""

    id: str
    doc_id: str
    text: str
    metadata: dict = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "doc_id": self.doc_id, "text": self.text, "metadata": self.metadata}


@dataclass(frozen=True)
class Hit:
    """A search result: the chunk and its cosine similarity to the query (higher is closer)."""

    chunk: Chunk
    score: float


def split_into_chunks(text: str, chunk_words: int, chunk_overlap: int) -> list[str]:
    """Split `text` into overlapping windows of words; each window is an exact slice of `text`.

    Words are runs of non-space characters. A word ends a sentence when it ends in `.`, `!`, `?` or
    `…` (closing quotes or brackets may follow) or when a line break follows it. Rules:

    1. A window holds at most `chunk_words` words. Unless it reaches the end of the text, it ends at
       the last sentence end that leaves it at least `max(chunk_overlap + 1, chunk_words // 2)` words
       long; when there is none (a very long sentence) it is cut after exactly `chunk_words` words.
    2. The next window starts at the earliest sentence start among the previous window's last
       `chunk_overlap` words (so the overlap is whole sentences); when none starts there, it starts
       exactly `chunk_overlap` words before the previous window's end.
    3. A text with no words gives no windows; a text of at most `chunk_words` words gives one.
    """
    spans = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    n = len(spans)
    if n == 0:
        return []
    ends = [
        i == n - 1 or bool(_SENTENCE_END.search(text[s:e])) or "\n" in text[e : spans[i + 1][0]]
        for i, (s, e) in enumerate(spans)
    ]
    min_cut = max(chunk_overlap + 1, chunk_words // 2)
    windows: list[tuple[int, int]] = []  # [start, stop) in words
    start = 0
    while True:
        stop = min(start + chunk_words, n)
        if stop < n:
            for end in range(stop, start + min_cut - 1, -1):
                if ends[end - 1]:
                    stop = end
                    break
        windows.append((start, stop))
        if stop == n:
            return [text[spans[a][0] : spans[b - 1][1]] for a, b in windows]
        next_start = stop - chunk_overlap
        for candidate in range(stop - chunk_overlap, stop):
            if ends[candidate - 1]:
                next_start = candidate
                break
        start = next_start


def _validate(documents: Sequence[Any], existing_ids: Container[str]) -> list[tuple[str, str, dict]]:
    """(id, text, metadata) of each document, or InvalidDocumentError for the first bad one."""
    seen: dict[str, int] = {}
    valid = []
    for position, document in enumerate(documents):
        if not isinstance(document, Mapping):
            raise InvalidDocumentError(position, None, f"must be an object with id and text, got {type(document).__name__}")
        doc_id = document.get("id")
        if not isinstance(doc_id, str) or not doc_id.strip():
            raise InvalidDocumentError(position, None, f"id must be a non-empty string, got {doc_id!r}")
        if "text" not in document:
            raise InvalidDocumentError(position, doc_id, "missing text")
        text = document["text"]
        if not isinstance(text, str):
            raise InvalidDocumentError(position, doc_id, f"text must be a string, got {type(text).__name__}")
        if not text.strip():
            raise InvalidDocumentError(position, doc_id, "empty text")
        metadata = document.get("metadata", {})
        if metadata is None:
            metadata = {}
        if not isinstance(metadata, Mapping):
            raise InvalidDocumentError(position, doc_id, f"metadata must be an object, got {type(metadata).__name__}")
        try:
            metadata = json.loads(json.dumps(dict(metadata), allow_nan=False))
        except (TypeError, ValueError) as error:
            raise InvalidDocumentError(position, doc_id, f"metadata is not JSON-serialisable ({error})") from None
        if doc_id in seen:
            raise InvalidDocumentError(position, doc_id, f"duplicate id (also document {seen[doc_id]})")
        if doc_id in existing_ids:
            raise InvalidDocumentError(position, doc_id, "a document with this id is already in the index")
        seen[doc_id] = position
        valid.append((doc_id, text, metadata))
    return valid


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    """`vectors` as contiguous float32 with each nonzero row scaled to L2 norm 1."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.ascontiguousarray(vectors / np.where(norms > 0, norms, 1.0), dtype=np.float32)


class DocumentIndex:
    """Chunks of documents, their vectors in FAISS, and the chunk store; see the module docstring.

    Not safe for concurrent `add` calls; searches do not change the index.
    """

    def __init__(self, config: IndexConfig | None = None, embedder: TextEmbedder | None = None) -> None:
        """An empty index (the same as `create`). The FAISS index is built on the first `add`."""
        self.config = config or IndexConfig()
        self.embedder: TextEmbedder = embedder if embedder is not None else Embedder()
        self._faiss = _import_faiss()
        self._use_gpu = self._gpu_wanted()
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
        return f"DocumentIndex(kind={self._kind or self.config.kind!r}, documents={self.documents}, chunks={len(self)}, embedder={self.embedder.name!r})"

    # -- adding ------------------------------------------------------------------------------------

    def add(self, documents: Iterable[Mapping[str, Any]], *, progress: bool = False) -> int:
        """Chunk, embed and index `documents`; returns the number of chunks added.

        All documents are validated first (InvalidDocumentError, a ValueError naming the first bad
        document: not an object, id not a non-empty string, text missing, not a string or blank,
        metadata not a JSON object, an id repeated in the batch or already in the index); if any is
        bad, or embedding fails, the index is unchanged. progress: show a bar while embedding.
        """
        valid = _validate(list(documents), self._doc_ids)
        chunks = [
            Chunk(f"{doc_id}#{n}", doc_id, piece, metadata)
            for doc_id, text, metadata in valid
            for n, piece in enumerate(split_into_chunks(text, self.config.chunk_words, self.config.chunk_overlap))
        ]
        if not chunks:
            return 0
        vectors = self._embed([chunk.text for chunk in chunks], progress)  # [n_chunks, dim]
        if self._cpu_index is None or self._cpu_index.ntotal == 0:
            cpu_index, kind, notes = self._build(vectors)
            search_index = self._to_search_index(cpu_index, kind)
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
            raise ValueError(f"embedder {self.embedder.name!r} gives {vectors.shape[1]}-dimensional vectors; the index holds {self._dim}")
        return _unit_rows(vectors)

    def _build(self, vectors: np.ndarray) -> tuple[Any, str, list[str]]:
        """A new CPU index of `config.kind` holding `vectors` (trained on them for IVF)."""
        faiss, config, dim = self._faiss, self.config, vectors.shape[1]
        notes = []
        kind = config.kind
        if kind == "ivf" and len(vectors) < IVF_MIN_POINTS_PER_LIST * config.nlist:
            notes.append(
                f"ivf with nlist={config.nlist} needs at least {IVF_MIN_POINTS_PER_LIST * config.nlist} chunks in the "
                f"first batch to train, got {len(vectors)}: using a flat index (exact search) instead; "
                f"build with more documents or a smaller nlist to get an IVF index"
            )
            kind = "flat"
        if kind == "ivf":
            index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, config.nlist, faiss.METRIC_INNER_PRODUCT)
            index.train(vectors)
        elif kind == "hnsw":
            index = faiss.IndexHNSWFlat(dim, config.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        else:
            index = faiss.IndexFlatIP(dim)
        self._tune(index, kind)
        index.add(vectors)
        return index, kind, notes

    def _tune(self, index: Any, kind: str) -> None:
        """Set the search-time parameters (not all of them survive write_index/read_index)."""
        if kind == "ivf":
            self._faiss.extract_index_ivf(index).nprobe = self.config.nprobe
        elif kind == "hnsw":
            index.hnsw.efSearch = self.config.ef_search

    def _gpu_wanted(self) -> bool:
        get_num_gpus = getattr(self._faiss, "get_num_gpus", None)
        gpus = get_num_gpus() if get_num_gpus is not None and hasattr(self._faiss, "index_cpu_to_all_gpus") else 0
        if self.config.use_gpu and gpus == 0:
            raise RuntimeError("use_gpu=True but faiss sees no GPU (is faiss-cpu installed instead of faiss-gpu-cu12?)")
        return gpus > 0 and self.config.use_gpu is not False

    def _to_search_index(self, cpu_index: Any, kind: str) -> Any:
        """The index searches go to: a copy on all GPUs when wanted and possible, else `cpu_index`."""
        if not self._use_gpu:
            return cpu_index
        if kind == "hnsw":
            return cpu_index  # faiss has no GPU HNSW
        return self._faiss.index_cpu_to_all_gpus(cpu_index)

    # -- searching ---------------------------------------------------------------------------------

    def search(self, query: str, k: int = 5) -> list[Hit]:
        """The (at most) `k` chunks closest to `query`, best first (ties: earlier added first)."""
        return self.search_batch([query], k)[0]

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
            results.append([Hit(self._chunks[row], -negative) for negative, row in found])
        return results

    # -- persistence -------------------------------------------------------------------------------

    def save(self, folder: str | os.PathLike[str]) -> Path:
        """Write the index to `folder` atomically (see the module docstring); returns its path.

        The folder's parent is created if needed; an existing index there is replaced (but a
        non-empty folder that is not a document index is not: ValueError)."""
        target = Path(folder).absolute()
        if target.exists() and not target.is_dir():
            raise ValueError(f"{folder} exists and is not a folder")
        if target.is_dir() and any(target.iterdir()) and not _is_index_folder(target):
            raise ValueError(f"{folder} is a folder with other files in it, not a document index: not replacing it")
        target.parent.mkdir(parents=True, exist_ok=True)
        aside = _aside_path(target)
        with _locked(target.parent, exclusive=True):
            _recover(target, aside)
            tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
            tmp.mkdir()
            try:
                _write_files(tmp, self._manifest_base(), self._index_for_saving(), self._chunks)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            if target.exists():
                _move_aside(target, aside)
            _move_in(tmp, target)
            _discard(aside)
        return target

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
        raises EmbedderMismatchError, a ValueError ("index built with X, not Y"). Raises IndexNotFoundError when there is no
        index, CorruptIndexError when the folder is not a specdraft index, has an unsupported format
        version, or its files do not match the manifest's checksums and counts.
        """
        target = Path(folder).absolute()
        if not target.parent.is_dir():
            raise IndexNotFoundError(f"no document index at {folder}")
        with _locked(target.parent, exclusive=False):
            source = target if target.is_dir() else _aside_path(target)
            if not source.is_dir():
                raise IndexNotFoundError(f"no document index at {folder}")
            manifest = _read_manifest(source, folder)
            built_with = manifest["embedder"]
            if embedder is None:
                if not built_with.get("model"):
                    raise ValueError(f"index {folder} was built with the custom embedder {built_with['name']!r}: pass it to load")
                embedder = Embedder(EmbedderConfig(model=built_with["model"]))
            if embedder.name != built_with["name"]:
                raise EmbedderMismatchError(f"index {folder} was built with {built_with['name']}, not {embedder.name}")
            try:
                config = IndexConfig(**manifest["config"], use_gpu=use_gpu)
            except (TypeError, ValueError) as error:
                raise CorruptIndexError(f"{folder}: bad configuration in {_MANIFEST_FILE}: {error}") from None
            index = cls(config, embedder)
            cpu_index = _read_faiss(index._faiss, source, folder)
            chunks = _read_chunks(source, folder)
        counts = manifest["counts"]
        if not (cpu_index.ntotal == len(chunks) == counts["chunks"]) or cpu_index.d != built_with["dim"]:
            raise CorruptIndexError(
                f"{folder}: the manifest says {counts['chunks']} chunks of dimension {built_with['dim']}, the files hold "
                f"{len(chunks)} chunks and {cpu_index.ntotal} vectors of dimension {cpu_index.d}"
            )
        doc_ids = {chunk.doc_id for chunk in chunks}
        if len(doc_ids) != counts["documents"]:
            raise CorruptIndexError(f"{folder}: the manifest says {counts['documents']} documents, the chunks have {len(doc_ids)}")
        index._dim = cpu_index.d
        index._chunks, index._doc_ids, index._notes = chunks, doc_ids, list(manifest.get("notes", []))
        if chunks:
            if manifest["index_kind"] is None:
                raise CorruptIndexError(f"{folder}: {_MANIFEST_FILE} has chunks but no index_kind")
            index._kind = manifest["index_kind"]
            index._tune(cpu_index, index._kind)
            index._cpu_index = cpu_index
            index._search_index = index._to_search_index(cpu_index, index._kind)
        return index


# -- files ------------------------------------------------------------------------------------------


def _is_index_folder(folder: Path) -> bool:
    """Whether `folder` holds a manifest of this format (its files are not checked)."""
    try:
        return json.loads((folder / _MANIFEST_FILE).read_text(encoding="utf-8")).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):
        return False


def _aside_path(target: Path) -> Path:
    """Where the previous index waits while a new one is moved in."""
    return target.with_name(f".{target.name}.old")


@contextlib.contextmanager
def _locked(folder: Path, exclusive: bool) -> Iterator[None]:
    """flock on `folder` itself (no lock file is left behind)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # releases the lock


def _recover(target: Path, aside: Path) -> None:
    """Finish what a crashed save left (under the exclusive lock): put a previous index moved aside
    back when no new one replaced it, remove one that was, and remove abandoned temporary folders."""
    if aside.exists():
        if target.exists():
            shutil.rmtree(aside)
        else:
            os.rename(aside, target)
            fsync_folder(target.parent)
    for stale in target.parent.glob(f".{glob.escape(target.name)}.tmp-*"):
        shutil.rmtree(stale, ignore_errors=True)


def _sha256_and_fsync(path: Path) -> dict[str, Any]:
    """{"sha256", "bytes"} of a file just written, after flushing it to disk."""
    digest = hashlib.sha256()
    with open(path, "r+b") as file:
        while block := file.read(_HASH_BLOCK_BYTES):
            digest.update(block)
        os.fsync(file.fileno())
    return {"sha256": digest.hexdigest(), "bytes": path.stat().st_size}


def _write_files(tmp: Path, manifest: dict[str, Any], cpu_index: Any, chunks: Sequence[Chunk]) -> None:
    """Write the index, the chunk store and (last) the manifest into `tmp`, all fsynced."""
    faiss = _import_faiss()
    faiss.write_index(cpu_index, str(tmp / _INDEX_FILE))
    with open(tmp / _CHUNKS_FILE, "w", encoding="utf-8") as file:
        for chunk in chunks:
            file.write(json.dumps(chunk.to_dict(), ensure_ascii=False) + "\n")
    manifest = dict(manifest, files={name: _sha256_and_fsync(tmp / name) for name in (_INDEX_FILE, _CHUNKS_FILE)})
    with open(tmp / _MANIFEST_FILE, "w", encoding="utf-8") as file:
        json.dump(manifest, file, indent=2, ensure_ascii=False)
        file.write("\n")
        file.flush()
        os.fsync(file.fileno())
    fsync_folder(tmp)


def _move_aside(target: Path, aside: Path) -> None:
    os.rename(target, aside)
    fsync_folder(target.parent)


def _move_in(tmp: Path, target: Path) -> None:
    os.rename(tmp, target)
    fsync_folder(target.parent)


def _discard(aside: Path) -> None:
    if aside.exists():
        shutil.rmtree(aside)


def _read_manifest(source: Path, folder: Any) -> dict[str, Any]:
    """The manifest, checked for format, version, fields and the other files' checksums."""
    path = source / _MANIFEST_FILE
    if not path.is_file():
        raise CorruptIndexError(f"{folder} is not a specdraft document index (no {_MANIFEST_FILE})")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise CorruptIndexError(f"{folder}: {_MANIFEST_FILE} is not valid JSON ({error})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise CorruptIndexError(f"{folder} is not a specdraft document index ({_MANIFEST_FILE} has another format)")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise CorruptIndexError(
            f"{folder}: format version {manifest.get('format_version')!r} is not supported (this specdraft reads {FORMAT_VERSION})"
        )
    try:
        embedder, counts, files = manifest["embedder"], manifest["counts"], manifest["files"]
        checks = [(name, files[name]["sha256"], files[name]["bytes"]) for name in (_INDEX_FILE, _CHUNKS_FILE)]
        ok = (
            isinstance(embedder["name"], str)
            and isinstance(embedder["dim"], int)
            and isinstance(counts["chunks"], int)
            and isinstance(counts["documents"], int)
            and isinstance(manifest["config"], dict)
            and manifest["index_kind"] in (*KINDS, None)
        )
    except (KeyError, TypeError):
        ok = False
    if not ok:
        raise CorruptIndexError(f"{folder}: {_MANIFEST_FILE} is missing fields or has wrong types")
    for name, sha256, size in checks:
        file = source / name
        if not file.is_file():
            raise CorruptIndexError(f"{folder}: {name} is missing")
        digest = hashlib.sha256()
        with open(file, "rb") as handle:
            while block := handle.read(_HASH_BLOCK_BYTES):
                digest.update(block)
        if file.stat().st_size != size or digest.hexdigest() != sha256:
            raise CorruptIndexError(f"{folder}: {name} does not match its checksum in {_MANIFEST_FILE} (corrupt or modified)")
    return manifest


def _read_faiss(faiss: Any, source: Path, folder: Any) -> Any:
    try:
        return faiss.read_index(str(source / _INDEX_FILE))
    except RuntimeError as error:
        raise CorruptIndexError(f"{folder}: faiss cannot read {_INDEX_FILE}: {error}") from None


def _read_chunks(source: Path, folder: Any) -> list[Chunk]:
    chunks = []
    with open(source / _CHUNKS_FILE, encoding="utf-8") as file:
        for number, line in enumerate(file, 1):
            try:
                row = json.loads(line)
                chunk = Chunk(row["id"], row["doc_id"], row["text"], row["metadata"])
                if not all(isinstance(value, str) for value in (chunk.id, chunk.doc_id, chunk.text)) or not isinstance(chunk.metadata, dict):
                    raise TypeError("wrong field types")
                chunks.append(chunk)
            except (ValueError, KeyError, TypeError) as error:
                raise CorruptIndexError(f"{folder}: {_CHUNKS_FILE} line {number} is not a chunk ({error})") from None
    return chunks

"""`IndexConfig`: how a document index chunks its documents and which FAISS index holds their vectors.

A frozen, validated value: constructing one with a field out of range raises ValueError naming the
field. `persisted()` is what a saved index records in its manifest (everything but `use_gpu`, which is
chosen again on every load). The index kinds are `KINDS`; see `specdraft.retrieval.index` for what
each one does.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["KINDS", "IndexConfig"]

KINDS = ("flat", "ivf", "hnsw")


@dataclass(frozen=True)
class IndexConfig:
    """How documents are chunked and which FAISS index holds their vectors.

    kind: "flat" (exact), "ivf" or "hnsw" (see `specdraft.retrieval.index`). chunk_words: words per chunk
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

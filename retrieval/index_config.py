"""`IndexConfig`: how a document index chunks its documents and which FAISS index holds their vectors.

A frozen, validated value: constructing one with a field out of range raises ValueError naming the
field. `persisted()` is what a saved index records in its manifest (everything but `use_gpu`, which is
chosen again on every load). The index kinds are `KINDS`; see `specdraft.retrieval.index` for what
each one does.

`HNSWConfig` is the one description of a FAISS HNSW graph (links per node, build and search beams):
a document index of kind "hnsw" builds its graph from `IndexConfig.hnsw`, and iterative RAG's HNSW
retriever (`specdraft.retrieval.iterative.dense`) from its own `HNSWConfig`; both through
`faiss_index.new_hnsw`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["KINDS", "HNSWConfig", "IndexConfig"]

KINDS = ("flat", "ivf", "hnsw")


@dataclass(frozen=True)
class HNSWConfig:
    """A FAISS HNSW graph (`IndexHNSWFlat`, inner product): `m` links per node, `ef_construction`
    candidates kept while building (40 is faiss's own default, what document indexes have always
    been built with), `ef_search` candidates kept while searching."""

    m: int = 32
    ef_construction: int = 40
    ef_search: int = 64

    def __post_init__(self) -> None:
        for name, minimum in (("m", 2), ("ef_construction", 1), ("ef_search", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


@dataclass(frozen=True)
class IndexConfig:
    """How documents are chunked and which FAISS index holds their vectors.

    kind: "flat" (exact), "ivf" or "hnsw" (see `specdraft.retrieval.index`). chunk_words: words per chunk
    (at most). chunk_overlap: words a chunk repeats from the previous one (at most; < chunk_words).
    nlist, nprobe: IVF lists, and lists probed per search. hnsw_m, ef_search: `HNSWConfig.m` and
    `HNSWConfig.ef_search` of the graph (`hnsw`; the names a manifest records). use_gpu: None = use
    the GPU when faiss sees one; True = require one; False = CPU only. Not saved: chosen again on
    every load.
    """

    kind: str = "flat"
    chunk_words: int = 120
    chunk_overlap: int = 20
    nlist: int = 64
    hnsw_m: int = HNSWConfig.m
    nprobe: int = 8
    ef_search: int = HNSWConfig.ef_search
    use_gpu: bool | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        for name, minimum in (
            ("chunk_words", 1),
            ("chunk_overlap", 0),
            ("nlist", 1),
            ("hnsw_m", 2),
            ("nprobe", 1),
            ("ef_search", 1),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
        if self.chunk_overlap >= self.chunk_words:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_words ({self.chunk_words})"
            )
        if self.use_gpu is not None and not isinstance(self.use_gpu, bool):
            raise ValueError(f"use_gpu must be None, True or False, got {self.use_gpu!r}")

    @property
    def hnsw(self) -> HNSWConfig:
        """The HNSW graph this configuration describes (kind "hnsw")."""
        return HNSWConfig(m=self.hnsw_m, ef_search=self.ef_search)

    def persisted(self) -> dict[str, Any]:
        """The fields stored in a manifest (all but `use_gpu`)."""
        values = asdict(self)
        del values["use_gpu"]
        return values

"""The FAISS side of a document index: importing faiss, building, tuning and GPU copies.

- `import_faiss()` returns the `faiss` module or raises `FaissNotInstalledError` naming the pip command.
- `build_index(faiss, config, vectors)` makes a new CPU index of `config.kind` holding `vectors`
  (inner product over unit vectors, i.e. cosine similarity). An IVF index is trained on those
  vectors and needs at least `IVF_MIN_POINTS_PER_LIST * nlist` of them; with fewer it falls back to
  a flat (exact) index and returns a note saying so.
- `new_hnsw(faiss, dim, hnsw)`: an empty HNSW index with an `HNSWConfig`'s graph parameters (the
  one place an HNSW index is made: document indexes and iterative RAG's HNSW retriever).
- `tune(faiss, config, index, kind)` sets the search-time parameters (`nprobe`, `ef_search`), which
  do not all survive `write_index` / `read_index`, so it runs after every build and load.
- `gpu_wanted` / `to_search_index`: with a GPU visible to faiss and `use_gpu` not False, flat and IVF
  indexes are searched through a copy on all GPUs (faiss has no GPU HNSW); the CPU index stays the
  one that is saved.

Vectors are `[n, dim]` float32 arrays; `unit_rows` normalises them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .index_config import HNSWConfig, IndexConfig

__all__ = [
    "IVF_MIN_POINTS_PER_LIST",
    "FaissNotInstalledError",
    "import_faiss",
    "unit_rows",
    "build_index",
    "new_hnsw",
    "tune",
    "gpu_wanted",
    "to_search_index",
]

# faiss's k-means wants at least 39 training points per centroid (it warns below that).
IVF_MIN_POINTS_PER_LIST = 39


class FaissNotInstalledError(RuntimeError):
    """faiss is missing; the message names the pip command."""


def import_faiss() -> Any:
    """The `faiss` module; FaissNotInstalledError when it is not installed."""
    try:
        import faiss
    except ImportError:
        raise FaissNotInstalledError(
            "the document index needs faiss. Install it with:\n    pip install faiss-cpu\n"
            "(or faiss-gpu-cu12 on a CUDA machine; the extras specdraft[cpu] / specdraft[gpu] do the same)"
        ) from None
    return faiss


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """`vectors` as contiguous float32 with each nonzero row scaled to L2 norm 1."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.ascontiguousarray(vectors / np.where(norms > 0, norms, 1.0), dtype=np.float32)


def build_index(faiss: Any, config: IndexConfig, vectors: np.ndarray) -> tuple[Any, str, list[str]]:
    """A new CPU index of `config.kind` holding `vectors` (trained on them for IVF), the kind actually
    built, and notes for the user (an IVF that fell back to flat)."""
    dim = vectors.shape[1]
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
        index = new_hnsw(faiss, dim, config.hnsw)
    else:
        index = faiss.IndexFlatIP(dim)
    tune(faiss, config, index, kind)
    index.add(vectors)
    return index, kind, notes


def new_hnsw(faiss: Any, dim: int, hnsw: HNSWConfig) -> Any:
    """An empty `IndexHNSWFlat` over `dim`-dimensional vectors (inner product) with `hnsw`'s links
    per node and build and search beams."""
    index = faiss.IndexHNSWFlat(dim, hnsw.m, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = hnsw.ef_construction
    index.hnsw.efSearch = hnsw.ef_search
    return index


def tune(faiss: Any, config: IndexConfig, index: Any, kind: str) -> None:
    """Set the search-time parameters (not all of them survive write_index/read_index)."""
    if kind == "ivf":
        faiss.extract_index_ivf(index).nprobe = config.nprobe
    elif kind == "hnsw":
        index.hnsw.efSearch = config.ef_search


def gpu_wanted(faiss: Any, use_gpu: bool | None) -> bool:
    """Whether searches should go to GPU copies; RuntimeError when `use_gpu` is True and faiss sees
    no GPU."""
    get_num_gpus = getattr(faiss, "get_num_gpus", None)
    gpus = get_num_gpus() if get_num_gpus is not None and hasattr(faiss, "index_cpu_to_all_gpus") else 0
    if use_gpu and gpus == 0:
        raise RuntimeError("use_gpu=True but faiss sees no GPU (is faiss-cpu installed instead of faiss-gpu-cu12?)")
    return gpus > 0 and use_gpu is not False


def to_search_index(faiss: Any, cpu_index: Any, kind: str, on_gpu: bool) -> Any:
    """The index searches go to: a copy on all GPUs when `on_gpu` and possible, else `cpu_index`."""
    if not on_gpu:
        return cpu_index
    if kind == "hnsw":
        return cpu_index  # faiss has no GPU HNSW
    return faiss.index_cpu_to_all_gpus(cpu_index)

"""Embeddings of the knowledge base, computed once and cached by content digest.

``kb_vectors(texts, embedder, config)`` returns the unit vectors ``float32 (len(texts), dim)`` of
``texts`` under ``embedder`` (the project's ``Embedder``, all-MiniLM-L6-v2 by default), computed once
and cached by content: the texts are cut into shards of ``shard_size`` (from the first text on) and
each shard's vectors are kept as ``shard-<key>.npy`` in ``data_cache_dir() /
"kb-vectors-<embedder>-s<max_seq_length>"``, where ``key`` digests the shard's texts
(``kb_corpus.chunks_digest``). So a later call reads every shard back instead of embedding again,
an interrupted run resumes at the first shard it had not written, and a knowledge base that is a
prefix of another (``KBConfig.max_chunks``) reuses its whole shards. Each shard is written
atomically; a tqdm bar on stderr shows progress. Embedding is the long one-off cost (17-21 chunks/s
at ``max_seq_length`` 32 on one thread of a busy shared 2-core machine).

``max_seq_length`` caps the word pieces the embedder reads per chunk (sentence-transformers'
``max_seq_length``; all-MiniLM-L6-v2's own is 256): a longer chunk is embedded from its first
``max_seq_length`` word pieces. Queries are embedded with the same cap (``capped_embedder``) so
documents and queries are read alike.

Run ``python -m specdraft.apps.bench.datasets.kb_embeddings`` to build the default knowledge base and its
vectors ahead of the benchmark (with ``OMP_NUM_THREADS=1`` to leave other cores free).
"""

from __future__ import annotations

import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from specdraft.retrieval.embedder import Embedder, EmbedderConfig

from .archive_cache import data_cache_dir, say
from .kb_corpus import chunks_digest

__all__ = ["EmbeddingCacheConfig", "capped_embedder", "kb_vectors", "vectors_dir", "embedded_prefix"]


@dataclass(frozen=True)
class EmbeddingCacheConfig:
    """max_seq_length: word pieces read per text (module docstring); shard_size: chunks per shard;
    batch_size: texts per forward pass."""

    max_seq_length: int = 32
    shard_size: int = 4096
    batch_size: int = 64

    def __post_init__(self) -> None:
        if not 8 <= self.max_seq_length <= 512:
            raise ValueError(f"max_seq_length must be between 8 and 512, got {self.max_seq_length}")
        if self.shard_size < 1 or self.batch_size < 1:
            raise ValueError("shard_size and batch_size must be >= 1")


def capped_embedder(config: EmbeddingCacheConfig = EmbeddingCacheConfig(), model: str = "all-MiniLM-L6-v2") -> Embedder:
    """The project's ``Embedder`` on the CPU with sentence-transformers' ``max_seq_length`` capped."""
    embedder = Embedder(EmbedderConfig(model=model, batch_size=config.batch_size, device="cpu"))
    embedder._loaded().max_seq_length = config.max_seq_length  # sentence-transformers' own setting
    return embedder


def vectors_dir(embedder: Any, config: EmbeddingCacheConfig) -> Path:
    """The cache folder of vectors under this embedder and cap."""
    slug = re.sub(r"[^A-Za-z0-9]+", "-", embedder.name).strip("-")[-40:]
    return data_cache_dir() / f"kb-vectors-{slug}-s{config.max_seq_length}"


def shard_path(folder: Path, texts: Sequence[str]) -> Path:
    return folder / f"shard-{chunks_digest(list(texts))[:24]}.npy"


def kb_vectors(
    texts: Sequence[str], embedder: Any, config: EmbeddingCacheConfig = EmbeddingCacheConfig()
) -> np.ndarray:
    """Unit vectors ``float32 (len(texts), dim)`` of ``texts``: each shard cached, or embedded and cached."""
    from tqdm import tqdm

    folder = vectors_dir(embedder, config)
    folder.mkdir(parents=True, exist_ok=True)
    shards = [texts[start : start + config.shard_size] for start in range(0, len(texts), config.shard_size)]
    paths = [shard_path(folder, shard) for shard in shards]
    missing = sum(not path.is_file() for path in paths)
    if missing:
        say(f"embedding {missing} of {len(shards)} shards of {config.shard_size} chunks into {folder} ...")
    started = time.perf_counter()
    parts = []
    with tqdm(total=len(texts), desc="embedding", unit="chunk", file=sys.stderr, disable=not missing) as bar:
        for shard, path in zip(shards, paths):
            if path.is_file():
                parts.append(np.load(path))
            else:
                vectors = np.ascontiguousarray(embedder.encode(list(shard)), dtype=np.float32)
                tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npy")
                np.save(tmp, vectors)
                os.replace(tmp, path)
                parts.append(vectors)
            bar.update(len(shard))
    if missing:
        say(f"embedded {missing} shards in {time.perf_counter() - started:.0f} s")
    if not parts:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    return np.concatenate(parts)


def embedded_prefix(texts: Sequence[str], embedder: Any, config: EmbeddingCacheConfig = EmbeddingCacheConfig()) -> int:
    """How many of the first ``texts`` already have cached vectors (whole shards from the start)."""
    folder = vectors_dir(embedder, config)
    done = 0
    for start in range(0, len(texts), config.shard_size):
        shard = texts[start : start + config.shard_size]
        if not shard_path(folder, shard).is_file():
            break
        done += len(shard)
    return done


def main() -> None:
    from .kb_corpus import KBConfig, load_chunks

    chunks = load_chunks(KBConfig())
    config = EmbeddingCacheConfig()
    kb_vectors(chunks.texts, capped_embedder(config), config)


if __name__ == "__main__":
    main()

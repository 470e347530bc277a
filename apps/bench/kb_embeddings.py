"""Embeddings of the knowledge base, computed once and cached by content digest.

``kb_vectors(texts, embedder, config)`` returns the unit vectors ``float32 (len(texts), dim)`` of
``texts`` under ``embedder`` (the project's ``Embedder``, all-MiniLM-L6-v2 by default). They are kept
in ``data_cache_dir() / "kb-vectors-<key>"`` where ``key`` digests the chunk texts
(``kb_corpus.chunks_digest``), the embedder's ``name`` and ``max_seq_length``; a later call with the
same texts reads ``vectors.npy`` back (memory-mapped) instead of embedding again.

Embedding is the long one-off cost (about 50 chunks/s on one busy CPU core), so it is written in
shards of ``shard_size`` chunks (``shard-<n>.npy``, each written atomically) and an interrupted run
resumes at the first missing shard; the shards are joined into ``vectors.npy`` at the end and
removed. A tqdm bar on stderr shows progress.

``max_seq_length`` caps the word pieces the embedder reads per chunk (sentence-transformers'
``max_seq_length``; all-MiniLM-L6-v2's own is 256): a longer chunk is embedded from its first
``max_seq_length`` word pieces. Queries are embedded with the same cap (``capped_embedder``) so
documents and queries are read alike.

Run ``python -m specdraft.apps.bench.kb_embeddings`` to build the default knowledge base and its
vectors ahead of the benchmark (with ``OMP_NUM_THREADS=1`` to leave other cores free).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from specdraft.files import atomic_write_text
from specdraft.retrieval.embedder import Embedder, EmbedderConfig

from .archive_cache import data_cache_dir, say
from .kb_corpus import chunks_digest

__all__ = ["EmbeddingCacheConfig", "capped_embedder", "kb_vectors", "vectors_dir"]


@dataclass(frozen=True)
class EmbeddingCacheConfig:
    """max_seq_length: word pieces read per text (module docstring); shard_size: chunks per shard;
    batch_size: texts per forward pass."""

    max_seq_length: int = 64
    shard_size: int = 8192
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


def vectors_dir(texts: Sequence[str], embedder: Embedder, config: EmbeddingCacheConfig) -> Path:
    """The cache folder of these texts' vectors under this embedder and cap."""
    blob = f"{chunks_digest(list(texts))}|{embedder.name}|{config.max_seq_length}"
    key = hashlib.sha256(blob.encode()).hexdigest()[:16]
    slug = re.sub(r"[^A-Za-z0-9]+", "-", embedder.name).strip("-")[-40:]
    return data_cache_dir() / f"kb-vectors-{slug}-s{config.max_seq_length}-{key}"


def kb_vectors(texts: Sequence[str], embedder: Embedder, config: EmbeddingCacheConfig = EmbeddingCacheConfig()) -> np.ndarray:
    """Unit vectors ``float32 (len(texts), dim)`` of ``texts``: cached, or embedded (resumably) and cached."""
    folder = vectors_dir(texts, embedder, config)
    final = folder / "vectors.npy"
    if final.is_file():
        vectors = np.load(final, mmap_mode="r")
        if vectors.shape[0] == len(texts):
            return vectors
        say(f"{final} has {vectors.shape[0]} rows for {len(texts)} texts; embedding again")
    folder.mkdir(parents=True, exist_ok=True)
    from tqdm import tqdm

    n_shards = (len(texts) + config.shard_size - 1) // config.shard_size
    done = sum((folder / f"shard-{i:05d}.npy").is_file() for i in range(n_shards))
    say(f"embedding {len(texts)} chunks into {folder} ({done}/{n_shards} shards already there) ...")
    started = time.perf_counter()
    with tqdm(total=len(texts), desc="embedding", unit="chunk", file=sys.stderr, mininterval=10) as bar:
        for i in range(n_shards):
            shard = folder / f"shard-{i:05d}.npy"
            part = texts[i * config.shard_size : (i + 1) * config.shard_size]
            if not shard.is_file():
                vectors = embedder.encode(part)
                tmp = shard.with_name(f"{shard.name}.{os.getpid()}.tmp.npy")
                np.save(tmp, vectors)
                os.replace(tmp, shard)
            bar.update(len(part))
    joined = np.concatenate([np.load(folder / f"shard-{i:05d}.npy") for i in range(n_shards)])
    tmp = folder / f"vectors.{os.getpid()}.tmp.npy"
    np.save(tmp, np.ascontiguousarray(joined, dtype=np.float32))
    os.replace(tmp, final)
    manifest = {"texts": len(texts), "embedder": embedder.name, "max_seq_length": config.max_seq_length,
                "dim": int(joined.shape[1]), "seconds_this_run": round(time.perf_counter() - started, 1)}
    atomic_write_text(folder / "manifest.json", json.dumps(manifest, indent=2))
    for i in range(n_shards):
        (folder / f"shard-{i:05d}.npy").unlink(missing_ok=True)
    say(f"embedded {len(texts)} chunks in {time.perf_counter() - started:.0f} s")
    return np.load(final, mmap_mode="r")


def main() -> None:
    from .kb_corpus import KBConfig, load_chunks

    chunks = load_chunks(KBConfig())
    config = EmbeddingCacheConfig()
    kb_vectors(chunks.texts, capped_embedder(config), config)


if __name__ == "__main__":
    main()

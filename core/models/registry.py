"""Registry of the language models that specdraft can fetch through pip, and checkpoint resolution.

This module is the stable import path for the three modules that do the work:

- `catalog`: which models exist (`REGISTRY`), which pinned pip packages hold them and where their
  GGUF bytes lie inside those packages; installation checks and errors.
- `gguf_files`: `gguf_path`, the complete GGUF file of a model, assembled once into
  `cache_dir()/gguf/` and verified against the pinned sha256 (a marker remembers the check).
- `checkpoints`: `resolve_checkpoint`, which maps a registry short name, a local checkpoint folder, a
  local `.gguf` file or a hub id to something `from_pretrained` accepts, converting GGUF files once
  into transformers checkpoints under `cache_dir()/hf/`.

`cache_dir()` (from `specdraft.files`) is specdraft's cache folder. Every cached artefact is written
under a temporary name in its final folder and renamed into place, and each build holds an `fcntl`
lock, so concurrent processes never see or produce a partial file.
"""

from __future__ import annotations

from ..files import cache_dir
from .catalog import (
    REGISTRY,
    ChecksumMismatchError,
    ModelNotInstalledError,
    PackagedModel,
    PackageFile,
    lookup,
    missing_packages,
    part_paths,
    pip_install_command,
)
from .checkpoints import cached_checkpoint, checkpoint_cache_path, list_models, resolve_checkpoint
from .gguf_files import gguf_path

__all__ = [  # the files module's cache folder, and the public names of catalog, gguf_files and checkpoints
    "cache_dir",
    "PackageFile",
    "PackagedModel",
    "REGISTRY",
    "ModelNotInstalledError",
    "ChecksumMismatchError",
    "lookup",
    "pip_install_command",
    "missing_packages",
    "part_paths",
    "gguf_path",
    "cached_checkpoint",
    "checkpoint_cache_path",
    "resolve_checkpoint",
    "list_models",
]

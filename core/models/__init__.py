"""Packaged models: the registry of GGUF models shipped through pip, and checkpoint resolution.

`resolve_checkpoint(name_or_path)` turns a registry short name, a local checkpoint folder, a local
`.gguf` file or a hub id into something `from_pretrained` loads; see `specdraft.models.registry`.
"""

from .registry import (
    REGISTRY,
    ChecksumMismatchError,
    ModelNotInstalledError,
    PackagedModel,
    PackageFile,
    cache_dir,
    cached_checkpoint,
    checkpoint_cache_path,
    gguf_path,
    list_models,
    missing_packages,
    part_paths,
    pip_install_command,
    resolve_checkpoint,
)

__all__ = [
    "REGISTRY",
    "ChecksumMismatchError",
    "ModelNotInstalledError",
    "PackagedModel",
    "PackageFile",
    "cache_dir",
    "cached_checkpoint",
    "checkpoint_cache_path",
    "gguf_path",
    "list_models",
    "missing_packages",
    "part_paths",
    "pip_install_command",
    "resolve_checkpoint",
]

"""Verified GGUF files of registry models, assembled once into the cache.

`gguf_path(name)` returns the path of registry model `name`'s complete GGUF file, checked against the
size and sha256 pinned in `catalog.REGISTRY`:

- a single-file model is used in place, inside its pip package;
- a split model's parts are concatenated in order into `cache_dir()/gguf/<name>.gguf`, written to a
  temporary `.<name>.gguf.<random>.tmp` beside it and renamed into place (a dead process's leftovers
  are removed by the next assembly).

After a successful check, `cache_dir()/gguf/<name>.gguf.sha256-ok` records the file's path, size,
mtime and hash, so later calls skip hashing while the file is unchanged. Everything happens under an
`fcntl` lock on `cache_dir()/gguf/.<name>.lock`, so concurrent processes never see or produce a
partial file.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import BinaryIO

from ..files import HASH_BLOCK_BYTES, atomic_write, atomic_write_text, cache_dir, file_lock, sha256_file
from .catalog import ChecksumMismatchError, PackagedModel, lookup, part_paths, pip_install_command

__all__ = ["gguf_path"]


def progress(message: str) -> None:
    """One line for a person waiting on a slow step: stderr, prefixed `specdraft:`."""
    print(f"specdraft: {message}", file=sys.stderr, flush=True)


def _fingerprint(path: Path, sha256: str) -> dict[str, object]:
    """What a verification marker records: the file's identity and the hash it was checked against."""
    stat = path.stat()
    return {"path": str(path.resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": sha256}


def _marker_path(name: str) -> Path:
    return cache_dir() / "gguf" / f"{name}.gguf.sha256-ok"


def _is_verified(model: PackagedModel, path: Path) -> bool:
    """True when the marker says `path`, at its current size and mtime, matched `model.sha256`."""
    try:
        recorded = json.loads(_marker_path(model.name).read_text())
    except (OSError, ValueError):
        return False
    return recorded == _fingerprint(path, model.sha256)


def _verify(model: PackagedModel, path: Path) -> None:
    """Check `path` against `model`'s size and sha256 and write the marker; ChecksumMismatchError
    otherwise. The caller decides what to do with a bad file."""
    size = path.stat().st_size
    if model.size_bytes is not None and size != model.size_bytes:
        raise ChecksumMismatchError(f"{path} ({model.name}) has {size:,} bytes, expected {model.size_bytes:,}")
    progress(f"verifying sha256 of {model.name} ({size / 1e6:.0f} MB)")
    actual = sha256_file(path)
    if actual != model.sha256:
        raise ChecksumMismatchError(f"{path} ({model.name}) has sha256 {actual}, expected {model.sha256}")
    marker = _marker_path(model.name)
    marker.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(marker, json.dumps(_fingerprint(path, model.sha256)), readable=True)


def _concatenate(parts: list[Path], target: Path) -> None:
    """Write the concatenation of `parts` to `target` through a temporary file and a rename."""

    def write(out: BinaryIO) -> None:
        for part in parts:
            with open(part, "rb") as handle:
                shutil.copyfileobj(handle, out, HASH_BLOCK_BYTES)

    atomic_write(target, write, readable=True)


def gguf_path(name: str) -> Path:
    """Path of registry model `name`'s verified GGUF file.

    A single-part model's file is returned in place, inside its package. A split model's parts are
    concatenated once into `cache_dir()/gguf/<name>.gguf`. Either way the size and sha256 are checked
    the first time and a marker remembers the result, so later calls cost a few `stat`s.

    Raises ValueError for an unknown name, ModelNotInstalledError when its packages are missing, and
    ChecksumMismatchError when the bytes differ from the pinned hash (an assembled file is deleted
    first; a file inside a package is left for pip to reinstall).
    """
    model = lookup(name)
    parts = part_paths(model)
    gguf_dir = cache_dir() / "gguf"
    with file_lock(gguf_dir / f".{name}.lock"):
        if len(parts) == 1:
            path = parts[0]
            if not _is_verified(model, path):
                try:
                    _verify(model, path)
                except ChecksumMismatchError as error:
                    reinstall = pip_install_command(name).replace("--no-deps", "--no-deps --force-reinstall")
                    raise ChecksumMismatchError(f"{error}; reinstall with: {reinstall}") from None
            return path
        path = gguf_dir / f"{name}.gguf"
        if path.is_file() and _is_verified(model, path):
            return path
        for stale in gguf_dir.glob(f".{path.name}.*.tmp"):
            stale.unlink(missing_ok=True)  # left by a process that died mid-assembly
        progress(f"assembling {name} from {len(parts)} parts into {path}")
        _concatenate(parts, path)
        try:
            _verify(model, path)
        except ChecksumMismatchError:
            path.unlink(missing_ok=True)
            raise
        return path

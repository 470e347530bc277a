"""File plumbing shared by everything specdraft keeps on disk: caches, indexes, datastores.

Contract of each helper:

- `cache_dir()`: specdraft's cache folder, `$SPECDRAFT_CACHE_DIR`, else `$XDG_CACHE_HOME/specdraft`,
  else `~/.cache/specdraft` (an empty variable counts as unset). Not created here.
- `atomic_write(path, write)` (and `atomic_write_bytes` / `atomic_write_text`): `path` is replaced
  by a renamed temporary file of its folder that was flushed and fsynced first, so a reader sees
  either the previous file or the whole new one, never a partial file. The temporary file is removed
  when writing fails. The folder itself is not fsynced (`fsync_folder` does that).
- `folder_swap(target)`: a context manager yielding an empty temporary folder beside `target`; when
  the `with` block ends normally the new folder is fsynced and swapped in by renames (an existing
  `target` moves aside to `aside_path(target)` first and is removed last), so at every instant
  `target` or the aside folder holds a complete folder. `recover_folder_swap` finishes a swap that a
  crash interrupted. Callers that can run concurrently hold a `file_lock` around both.
- `file_lock(path)`: an `fcntl.flock` held for a `with` block, exclusive or shared; on a folder the
  folder itself is locked (nothing is created), on any other path a lock file (created if needed).
- `sha256_file`, `fsync_file`, `fsync_folder`, `make_readable` (0644 files, 0755 folders).

Temporary names: by default `tempfile` picks `.<name>.<random>.tmp` (private, 0600/0700, until
`readable=True` opens it up); a caller that must recognise its own leftovers passes `tmp=` (that path
is created with `open`/`mkdir`, so it gets the usual umask permissions).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "HASH_BLOCK_BYTES",
    "cache_dir",
    "sha256_file",
    "fsync_file",
    "fsync_folder",
    "make_readable",
    "file_lock",
    "atomic_write",
    "atomic_write_bytes",
    "atomic_write_text",
    "aside_path",
    "folder_swap",
    "recover_folder_swap",
]

HASH_BLOCK_BYTES = 1 << 20


def cache_dir() -> Path:
    """specdraft's cache folder: `$SPECDRAFT_CACHE_DIR`, else `$XDG_CACHE_HOME/specdraft`, else
    `~/.cache/specdraft`. Empty variables count as unset. Not created here."""
    if os.environ.get("SPECDRAFT_CACHE_DIR"):
        return Path(os.environ["SPECDRAFT_CACHE_DIR"]).expanduser()
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]).expanduser() / "specdraft"
    return Path.home() / ".cache" / "specdraft"


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Lowercase hex sha256 of the file's bytes, read `HASH_BLOCK_BYTES` at a time."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(HASH_BLOCK_BYTES):
            digest.update(block)
    return digest.hexdigest()


def fsync_file(path: str | os.PathLike[str]) -> None:
    """Flush a file that is already written (and closed) to disk."""
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def fsync_folder(folder: str | os.PathLike[str]) -> None:
    """Make the renames in `folder` durable (a no-op where folders cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_readable(path: Path) -> None:
    """Give `path` (and, for a folder, everything in it) ordinary permissions, 0644 for files and
    0755 for folders: `tempfile` and safetensors create them private (0600/0700), which would hide a
    shared cache from other users."""
    if path.is_dir():
        for child in path.iterdir():
            make_readable(child)
        path.chmod(0o755)
    else:
        path.chmod(0o644)


@contextlib.contextmanager
def file_lock(path: Path, *, exclusive: bool = True) -> Iterator[None]:
    """Hold an `fcntl.flock` on `path` for the `with` block: exclusive, or shared when
    `exclusive=False`. An existing folder is locked itself (opened read-only, nothing is left
    behind); any other path is a lock file, created with its parent folders if needed."""
    if path.is_dir():
        fd = os.open(path, os.O_RDONLY)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # releases the lock


def atomic_write(
    path: Path, write: Callable[[BinaryIO], object], *, tmp: Path | None = None, readable: bool = False
) -> None:
    """Replace `path` with the bytes `write(file)` writes, atomically (see the module docstring).

    tmp: the temporary file (in `path`'s folder); default a fresh `.<name>.<random>.tmp`.
    readable: `make_readable` the file before it is renamed into place.
    """
    if tmp is None:
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        tmp, handle = Path(name), os.fdopen(fd, "wb")
    else:
        handle = open(tmp, "wb")
    try:
        with handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        if readable:
            make_readable(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: Path, data: bytes, *, tmp: Path | None = None, readable: bool = False) -> None:
    """`atomic_write` of `data`."""
    atomic_write(path, lambda handle: handle.write(data), tmp=tmp, readable=readable)


def atomic_write_text(
    path: Path, text: str, *, encoding: str = "utf-8", tmp: Path | None = None, readable: bool = False
) -> None:
    """`atomic_write` of `text` encoded with `encoding`."""
    atomic_write_bytes(path, text.encode(encoding), tmp=tmp, readable=readable)


def aside_path(target: Path) -> Path:
    """Where `folder_swap` keeps the previous folder `target` while the new one moves in."""
    return target.with_name(f".{target.name}.old")


def _move_aside(target: Path, aside: Path) -> None:
    os.rename(target, aside)
    fsync_folder(target.parent)


def _move_in(tmp: Path, target: Path) -> None:
    os.rename(tmp, target)
    fsync_folder(target.parent)


def _discard(aside: Path) -> None:
    if aside.exists():
        shutil.rmtree(aside)


@contextlib.contextmanager
def folder_swap(
    target: Path, *, tmp: Path | None = None, aside: Path | None = None, readable: bool = False
) -> Iterator[Path]:
    """Yield an empty temporary folder beside `target` to fill; swap it in when the block ends.

    tmp: the temporary folder (created with `mkdir`); default a fresh `.<name>.<random>.tmp`.
    aside: where an existing `target` waits during the swap; default `aside_path(target)`.
    readable: `make_readable` the new folder before it is moved in.

    The files written into the folder are the caller's to fsync; the folder itself is fsynced here.
    When the block raises, the temporary folder is removed and `target` is left as it was. A crash
    during the swap leaves `target` or the aside folder complete; see `recover_folder_swap`.
    """
    if tmp is None:
        tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"))
    else:
        tmp.mkdir()
    aside = aside_path(target) if aside is None else aside
    try:
        yield tmp
        if readable:
            make_readable(tmp)
        fsync_folder(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if target.exists():
        _move_aside(target, aside)
    _move_in(tmp, target)
    _discard(aside)


def recover_folder_swap(target: Path, aside: Path | None = None) -> None:
    """Finish a `folder_swap` that a crash interrupted: put a previous folder that was moved aside
    back when no new one replaced it, or remove it when one did. Call it under the lock the swaps
    hold; temporary folders left behind are the caller's to remove (it knows their names)."""
    aside = aside_path(target) if aside is None else aside
    if aside.exists():
        if target.exists():
            shutil.rmtree(aside)
        else:
            os.rename(aside, target)
            fsync_folder(target.parent)

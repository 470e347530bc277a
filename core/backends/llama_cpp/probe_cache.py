"""The load-time exactness probe's verdict, kept on disk per build, CPU, model file and settings.

``LlamaCppModel`` checks at every load that a wide pass computes each row as one-token passes do
(``exactness.probe``: 36 one-token passes and 5 wide ones, ~0.7 s of the 0.5B's 1.9 s load, paid
by every ``specdraft correct`` call). The verdict depends only on what the key below holds, so an
exact verdict is stored under it, in ``cache_dir()/llama-probe/<key>.json``:

- the llama.cpp libraries in use: each file's name, size and modification time, in
  ``$LLAMA_CPP_LIB_PATH`` or the installed ``llama_cpp`` package's ``lib/`` (a rebuilt wheel is
  another key);
- the CPU: ``/proc/cpuinfo``'s model name and flags (the kernels are chosen at run time), and the
  cores this process may run on;
- the GGUF file: its resolved path, size and modification time;
- the settings: every ``LlamaCppConfig`` field, and every ``GGML_*`` and ``LLAMA_*`` environment
  variable (``GGML_CPU_TILED_MM_ALL_TYPES``, ``LLAMA_KV_PAD_MIN``, ...);
- the probe itself (``PROBE_PREFIX``, ``PROBE_WIDTHS``, ``CACHE_VERSION``).

A change to any of them is another key, so the probe runs again. Only exact verdicts are stored:
an inexact build is probed, and warned about, at every load. With a stored verdict the load still
times passes of ``COST_WIDTHS`` tokens into the model's cost profile (~0.25 s on the 0.5B), so the
first request drafts from this machine's costs of the moment. ``SPECDRAFT_PROBE_CACHE=0`` turns the
store off (every load probes).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
from pathlib import Path

from ...files import atomic_write_text, cache_dir
from .exactness import PROBE_PREFIX, PROBE_WIDTHS, Comparison, probe, probe_tokens, time_widths
from .library import llama_cpp_folder
from .runtime import LlamaRuntime

log = logging.getLogger(__name__)

CACHE_VERSION = 1
COST_WIDTHS = (1, 1, 1, 2, 4, 8, 16, 32)  # three one-token passes: the profile keeps their median


def checked_exactness(model: LlamaRuntime, gguf: str, settings: object) -> Comparison:
    """``exactness.probe(model)``'s verdict: from the store where an exact one is kept for this key,
    else probed (and stored when exact). ``gguf``: the model file's path; ``settings``: the model's
    ``LlamaCppConfig`` (a dataclass)."""
    if os.environ.get("SPECDRAFT_PROBE_CACHE", "1") == "0":
        return probe(model)
    path = cache_dir() / "llama-probe" / f"{probe_key(gguf, settings)}.json"
    stored = _read(path)
    if stored is not None:
        time_widths(model, probe_tokens(model), PROBE_PREFIX, COST_WIDTHS, model.cost)
        return stored
    verdict = probe(model)
    if verdict.exact:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, json.dumps(dataclasses.asdict(verdict)))
        except OSError as error:  # a read-only home: probe at every load, as before
            log.debug("could not store the exactness verdict in %s: %s", path, error)
    return verdict


def probe_key(gguf: str, settings: object) -> str:
    """The SHA-256 of everything the probe's verdict depends on (the module docstring)."""
    parts = {
        "version": [CACHE_VERSION, PROBE_PREFIX, list(PROBE_WIDTHS)],
        "libraries": _files(Path(os.environ.get("LLAMA_CPP_LIB_PATH") or Path(llama_cpp_folder()) / "lib")),
        "cpu": _cpu() + [str(len(os.sched_getaffinity(0)))],  # and the cores this process may use
        "gguf": _file(Path(gguf).resolve()),
        "settings": dataclasses.asdict(settings),  # type: ignore[call-overload]  # a dataclass instance
        "environment": {k: v for k, v in sorted(os.environ.items()) if k.startswith(("GGML_", "LLAMA_"))},
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _read(path: Path) -> Comparison | None:
    """The stored verdict at ``path``; None if there is none, or it is unreadable or not exact."""
    try:
        verdict = Comparison(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None
    return verdict if verdict.exact else None


def _file(path: Path) -> list[object]:
    stat = path.stat()
    return [str(path), stat.st_size, stat.st_mtime_ns]


def _files(folder: Path) -> list[list[object]]:
    if not folder.is_dir():
        return []
    return [_file(path) for path in sorted(folder.iterdir()) if path.is_file()]


def _cpu() -> list[str]:
    """The first processor's model name and flags, as ``/proc/cpuinfo`` gives them ([] elsewhere)."""
    try:
        lines = Path("/proc/cpuinfo").read_text().split("\n\n")[0].splitlines()
    except OSError:
        return []
    fields = {key.strip(): value.strip() for key, value in (line.split(":", 1) for line in lines if ":" in line)}
    return [fields.get("model name", ""), fields.get("flags", "")]

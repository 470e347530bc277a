"""The llama.cpp patches of ``scripts/patches`` apply, in ``scripts/setup.sh``'s order, to the pinned
source distribution (the one setup.sh keeps in specdraft's cache, downloaded there if missing),
each cleanly: no fuzz, no offset, no rejected hunk. The behaviour they buy is tested on the
installed build (tests/core/backends/llama_cpp: test_kernels.py, test_exactness.py)."""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from specdraft.files import cache_dir

ROOT = Path(__file__).resolve().parents[2]
SETUP = (ROOT / "scripts" / "setup.sh").read_text()
VERSION = re.search(r"^LLAMA_CPP_VERSION=(\S+)", SETUP, re.M).group(1)
PATCHES = re.findall(r"^\s+(scripts/patches/\S+\.patch)", SETUP, re.M)


def sdist() -> Path:
    path = cache_dir() / "sources" / f"llama_cpp_python-{VERSION}.tar.gz"
    if not path.is_file():
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-d", str(path.parent)]
        subprocess.run([*command, f"llama-cpp-python=={VERSION}"], check=True, capture_output=True, timeout=600)
    return path


def test_setup_lists_every_patch_in_the_folder():
    assert sorted(PATCHES) == sorted(
        f"scripts/patches/{p.name}" for p in (ROOT / "scripts" / "patches").glob("*.patch")
    )
    assert len(PATCHES) >= 3


@pytest.fixture(scope="module")
def vendored(tmp_path_factory) -> Path:
    """The files the patches touch, extracted from the pinned sdist's vendor/llama.cpp."""
    lines = [line for patch in PATCHES for line in (ROOT / patch).read_text().splitlines()]
    touched = {line[len("+++ b/") :].strip() for line in lines if line.startswith("+++ b/")}
    prefix = f"llama_cpp_python-{VERSION}/vendor/llama.cpp/"
    root = tmp_path_factory.mktemp("llama.cpp")
    with tarfile.open(sdist()) as archive:
        for name in touched:
            member = archive.getmember(prefix + name)
            target = root / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(archive.extractfile(member).read())
    return root


def test_every_patch_applies_cleanly_in_order(vendored):
    for patch in PATCHES:
        command = ["patch", "-p1", "--forward", "--no-backup-if-mismatch", "-d", str(vendored), "-i", str(ROOT / patch)]
        result = subprocess.run(command, capture_output=True, text=True)
        assert result.returncode == 0, (patch, result.stdout, result.stderr)
        assert not re.search(r"fuzz|offset|FAILED|reject", result.stdout, re.I), (patch, result.stdout)

"""pyproject.toml describes the tree it packages: every package-data pattern matches a file (a pattern
that matches nothing ships nothing and hides a missing folder), every listed package is a folder with
an ``__init__.py``, every package folder is listed (an unlisted subpackage is left out of the wheel),
and the plotting library is the ``bench`` extra's, not a base dependency."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib") if sys.version_info >= (3, 11) else pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[3]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
SETUPTOOLS = PROJECT["tool"]["setuptools"]


def folder(package: str) -> Path:
    """The folder ``package`` lives in, through ``[tool.setuptools.package-dir]`` (longest mapped prefix)."""
    mapped = SETUPTOOLS["package-dir"]
    prefix = max((name for name in mapped if package == name or package.startswith(name + ".")), key=len)
    return ROOT / mapped[prefix] / package[len(prefix) + 1 :].replace(".", "/")


def test_every_package_data_pattern_matches_a_file():
    empty = [
        f"{package}: {pattern}"
        for package, patterns in SETUPTOOLS["package-data"].items()
        for pattern in patterns
        if not any(path.is_file() for path in folder(package).glob(pattern))
    ]
    assert empty == []


def test_every_listed_package_is_a_folder_with_an_init():
    assert [package for package in SETUPTOOLS["packages"] if not (folder(package) / "__init__.py").is_file()] == []


def test_every_package_folder_is_listed():
    found = set()
    for root_package, path in SETUPTOOLS["package-dir"].items():
        for init in (ROOT / path).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / path).parts
            found.add(".".join((root_package, *parts)))
    assert sorted(found - set(SETUPTOOLS["packages"])) == []


def test_matplotlib_comes_with_the_bench_extra_only():
    def named(requirements: list[str]) -> list[str]:
        return [r for r in requirements if r.split(">")[0].split("=")[0].split("<")[0].strip() == "matplotlib"]

    assert named(PROJECT["project"]["dependencies"]) == []
    assert named(PROJECT["project"]["optional-dependencies"]["bench"]) != []

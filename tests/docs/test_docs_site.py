"""The documentation: the MkDocs site builds strictly, and the README and the pages quote only what exists.

- ``mkdocs build --strict`` (the ``docs`` extra) into a temporary folder: a broken link or anchor, or
  a page left out of the navigation, is a warning, and strict mode makes it fail. Result folders under
  ``docs/bench`` are linked but are not pages of the navigation (``not_in_nav`` in ``mkdocs.yml``).
  Two negative controls show that the configuration really catches both.
- Every repository path and every ``specdraft.*`` module the README and the pages name exists (the
  site's link check does not see text in backticks, and the README lies outside the site), and every
  local link of the README points at a file or folder that exists: a module moved or a result folder
  deleted without updating the docs fails here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
# the quoted documents: the README and the site's own pages (not the raw result notes under docs/bench)
QUOTED = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
TOP_FOLDERS = ("core", "apps", "copydraft", "retrieval", "edge", "tests", "benchmarks", "scripts", "demos", "docs")
REPO_PATH = re.compile(r"(?<![\w./~-])((?:%s)/[\w./-]*)" % "|".join(TOP_FOLDERS))
MODULE = re.compile(r"(?<![\w./-])specdraft(?:\.\w+)+")
# what follows these is a file a command writes, not one that must exist already
OUTPUT_FLAG = re.compile(r"(?:--out|--json|--site-dir|-d)\s+$")


def _mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess:
    try:
        import material  # noqa: F401
        import mkdocs  # noqa: F401
    except ImportError:
        pytest.fail("the docs tools are missing: pip install -e '.[docs]' (scripts/setup.sh installs them)")
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config), "--site-dir", str(site)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=config.parent,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )


def test_the_site_builds_strictly(tmp_path):
    result = _mkdocs_build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING" not in result.stderr, result.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "bench" / "gp-0.5b-pl3" / "results.png").is_file()  # result folders ship with the site


@pytest.fixture
def site_copy(tmp_path) -> Path:
    """A copy of mkdocs.yml and docs/ to break on purpose."""
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(DOCS, tmp_path / "docs")
    return tmp_path


def test_a_page_missing_from_the_nav_fails_the_build(site_copy):
    (site_copy / "docs" / "orphan.md").write_text("# Orphan\n\nNo navigation entry points here.\n")
    result = _mkdocs_build(site_copy / "mkdocs.yml", site_copy / "site")
    assert result.returncode != 0
    assert "orphan.md" in result.stderr


def test_a_broken_link_fails_the_build(site_copy):
    index = site_copy / "docs" / "index.md"
    index.write_text(index.read_text() + "\nSee [a deleted result](bench/no-such-run/results.md).\n")
    result = _mkdocs_build(site_copy / "mkdocs.yml", site_copy / "site")
    assert result.returncode != 0
    assert "no-such-run" in result.stderr


def _package_dirs() -> dict[str, Path]:
    """Import package -> folder, as pyproject.toml's setuptools ``package-dir`` maps them."""
    table = (ROOT / "pyproject.toml").read_text().split("[tool.setuptools.package-dir]", 1)[1].split("\n[", 1)[0]
    return {
        package: ROOT / folder for package, folder in re.findall(r'^"([\w.]+)"\s*=\s*"([^"]+)"', table, re.M)
    }  # no tomllib on 3.10


def _module_file(name: str, package_dirs: dict[str, Path]) -> Path | None:
    """The source file of module ``name`` (a package's ``__init__.py``), or None where there is none."""
    base = max((p for p in package_dirs if name == p or name.startswith(p + ".")), key=len, default=None)
    if base is None:
        return None
    folder = package_dirs[base].joinpath(*name[len(base) :].split(".")[1:])
    for candidate in (folder / "__init__.py", folder.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _module_exists(dotted: str, package_dirs: dict[str, Path]) -> bool:
    """``dotted`` names a module, or a name a module defines or imports (``specdraft.copydraft.Editor``)."""
    if _module_file(dotted, package_dirs):
        return True
    module, _, attribute = dotted.rpartition(".")
    source = _module_file(module, package_dirs)
    return source is not None and re.search(rf"\b{re.escape(attribute)}\b", source.read_text()) is not None


def _quoted_paths(text: str) -> set[str]:
    found = set()
    for match in REPO_PATH.finditer(text):
        path = match.group(1).rstrip(".")
        following = text[match.end() : match.end() + 1]
        placeholder = following != "" and following in "<*{" or re.search(r"[/-][A-Z]+\b", path)
        if placeholder or OUTPUT_FLAG.search(text[max(0, match.start() - 12) : match.start()]):
            continue  # a placeholder (docs/bench/load-NAME, gpu-<device>), a glob, or a file a command writes
        found.add(path)
    return found


@pytest.mark.parametrize("document", QUOTED, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_quoted_path_and_module_exists(document):
    text = document.read_text()
    package_dirs = _package_dirs()
    missing = sorted(p for p in _quoted_paths(text) if not (ROOT / p).exists())
    missing += sorted(m for m in set(MODULE.findall(text)) if not _module_exists(m, package_dirs))
    assert not missing, f"{document.name} quotes what does not exist: {missing}"


def test_the_readmes_local_links_exist():
    text = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\((?!https?://|#)([^)#\s]+)", text)
    assert links
    missing = sorted(link for link in links if not (ROOT / link).exists())
    assert not missing, f"README.md links to what does not exist: {missing}"


def test_the_readme_stays_short():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 250

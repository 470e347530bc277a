"""The site's diagrams render on a machine with no network.

The pages draw their diagrams from ```mermaid fences. Material for MkDocs fetches mermaid.js from a CDN
unless a ``mermaid`` is loaded already, so ``mkdocs.yml`` loads the copy vendored in
``docs/javascripts/mermaid.min.js`` (``extra_javascript``). Checked on the built site:

- no page loads a script from another host, and every page with a diagram loads the vendored copy;
- in a headless Chromium whose every request off this machine fails (a proxy on a closed port), each
  diagram of a page is drawn: Material replaces a fence's ``<pre class="mermaid">`` by a
  ``<div class="mermaid">`` holding the SVG only once Mermaid rendered it;
- negative control: the same site without the vendored script leaves the diagram as source text.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path

import pytest
from test_docs_site import DOCS, ROOT, _mkdocs_build

CHROMIUM = "/usr/bin/chromium"
VENDORED = "javascripts/mermaid.min.js"
SCRIPT_SRC = re.compile(r"<script\b[^>]*\bsrc=\"([^\"]+)\"")
FENCE = '<pre class="mermaid">'
DRAWN = '<div class="mermaid">'
NO_NETWORK = "--proxy-server=http://127.0.0.1:9"  # loopback still bypasses the proxy


def _build(config: Path, site: Path) -> Path:
    result = _mkdocs_build(config, site)
    assert result.returncode == 0, result.stdout + result.stderr
    return site


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return _build(ROOT / "mkdocs.yml", tmp_path_factory.mktemp("site") / "site")


def _diagram_pages(site: Path) -> list[Path]:
    return sorted(page for page in site.rglob("*.html") if FENCE in page.read_text())


def test_no_page_loads_a_script_from_another_host_and_diagram_pages_load_the_vendored_mermaid(site):
    for page in site.rglob("*.html"):
        sources = SCRIPT_SRC.findall(page.read_text())
        assert not [src for src in sources if re.match(r"^(?:[a-z]+:)?//", src)], page
    pages = _diagram_pages(site)
    assert {page.parent.name for page in pages} >= {"architecture", "deployment"}
    for page in pages:
        assert any(src.endswith(VENDORED) for src in SCRIPT_SRC.findall(page.read_text())), page
    assert (site / VENDORED).stat().st_size > 1_000_000  # the whole script, not a stub


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the built site without logging each request."""

    def log_message(self, format: str, *args: object) -> None:
        pass


def _rendered_dom(site: Path, page: Path) -> str:
    """The page's DOM after its scripts ran, in a headless Chromium that reaches nothing off this machine."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} not found: install Debian's chromium (scripts/setup.sh does as root)", pytrace=False)
    handler = functools.partial(QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/{page.relative_to(site).as_posix()}"
        flags = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"]
        flags += ["--disable-background-networking", NO_NETWORK, "--virtual-time-budget=20000", "--dump-dom"]
        result = subprocess.run([CHROMIUM, *flags, url], capture_output=True, text=True, timeout=120)
    finally:
        server.shutdown()
        server.server_close()
    assert result.returncode == 0 and "</html>" in result.stdout, result.stderr[-2000:]
    return result.stdout


def test_every_diagram_is_drawn_without_a_network(site):
    for page in _diagram_pages(site):
        fences = page.read_text().count(FENCE)
        dom = _rendered_dom(site, page)
        assert dom.count(DRAWN) == fences and FENCE not in dom, page


def test_without_the_vendored_script_the_diagram_stays_source_text(tmp_path):
    shutil.copytree(DOCS, tmp_path / "docs")
    config = (ROOT / "mkdocs.yml").read_text()
    without = re.sub(r"(?m)^extra_javascript:\n(?:  - .*\n)+", "", config)
    assert without != config
    (tmp_path / "mkdocs.yml").write_text(without)
    site = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    page = site / "architecture" / "index.html"
    dom = _rendered_dom(site, page)
    assert DRAWN not in dom and "flowchart" in dom  # Material gave up on the CDN: the source is shown

"""Serving the tiny model with the edge verify server on a real loopback server, for the edge tests."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Iterator

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "apps", "service"))

from live_server import LiveServer  # noqa: E402
from tiny_service import make_app  # noqa: E402

from specdraft.apps.service.edge_sessions import EdgeConfig  # noqa: E402

KEY = "edge-test-key-0123456789abcdef"


@contextlib.contextmanager
def edge_server(model, tmp_path, **edge) -> Iterator[str]:
    """The URL of a live server serving ``model`` with ``serve --edge`` (key ``KEY``)."""
    keys = tmp_path / "edge-keys"
    keys.write_text(KEY + "\n")
    app = make_app(model, api_key_file=str(keys), edge=True, edge_config=EdgeConfig(**edge))
    with LiveServer(app) as server:
        yield server.url

"""Serving the tiny model with the edge verify server on a real loopback server, for the edge tests."""

from __future__ import annotations

import contextlib
from typing import Iterator

from live_server import LiveServer
from tiny_service import make_app

from specdraft.apps.service.edge_sessions import EdgeConfig

KEY = "edge-test-key-0123456789abcdef"


@contextlib.contextmanager
def edge_server(model, tmp_path, **edge) -> Iterator[str]:
    """The URL of a live server serving ``model`` with ``serve --edge`` (key ``KEY``)."""
    keys = tmp_path / "edge-keys"
    keys.write_text(KEY + "\n")
    app = make_app(model, api_key_file=str(keys), edge=True, edge_config=EdgeConfig(**edge))
    with LiveServer(app) as server:
        yield server.url

"""``specdraft edge serve``: an OpenAI-compatible endpoint on the laptop whose answers are drafted by
the local model and verified by a remote ``specdraft serve --edge`` server (``specdraft.edge``).

``create_app(config, draft_model)`` builds the Flask app: ``completions`` (``POST /v1/chat/completions``,
``POST /v1/completions``, streamed or not, each answer with a ``speculation`` object), ``health``
(``GET /healthz``, ``GET /v1/models``) and ``demo`` (``GET /demo/``, a page showing verified, drafted
and unverified text and the live round-trip time). Errors are the service's JSON errors
(``specdraft.apps.service.errors``), access the service's checks (``specdraft.apps.service.access``:
without keys only requests addressed to this machine; with ``api_key_file`` a Bearer key on ``/v1/``).

The laptop process needs no torch: this package imports Flask, the service's pure validators (which
import no torch) and ``specdraft.edge`` (numpy, the standard library); the draft model's backend is
the caller's choice (llama.cpp by default).
"""

from __future__ import annotations

from typing import Any

from flask import Flask

from specdraft.apps.service.access import AccessPolicy, install_access_control
from specdraft.apps.service.api_keys import KeyRing
from specdraft.apps.service.errors import register_error_handlers

from . import completions, demo, health
from .config import EdgeLocalConfig
from .runner import EdgeRunner

__all__ = ["EdgeLocalConfig", "EdgeRunner", "create_app"]


def create_app(config: EdgeLocalConfig, draft_model: Any) -> Flask:
    """The endpoint for ``config``, drafting with ``draft_model`` (loaded by the caller; it must share
    the server model's tokenizer). Creating the app contacts no server."""
    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = config.max_request_bytes
    app.json.sort_keys = False
    app.extensions[completions.RUNNER] = EdgeRunner(config, draft_model)
    register_error_handlers(app)
    keys = KeyRing.load(config.api_key_file) if config.api_key_file is not None else None
    install_access_control(app, AccessPolicy(keys, (), config.allowed_hosts))
    app.register_blueprint(health.bp)
    app.register_blueprint(completions.bp)
    app.register_blueprint(demo.bp)
    return app

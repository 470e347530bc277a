"""Health and model listing on the laptop: ``GET /healthz`` and OpenAI's ``GET /v1/models``.

``/healthz`` answers without waiting for generations: ``{"status": "ok", "model", "draft_model",
"server", "server_reachable"}`` (``server_reachable``: whether the verify server answered its info
call; the endpoint works without it, its text then unverified). ``/v1/models`` lists the server's model.
"""

from __future__ import annotations

import time

from flask import Blueprint, Response, jsonify

from specdraft.edge import EdgeRefused

from .completions import current_runner

bp = Blueprint("edge_health", __name__)
STARTED = int(time.time())


@bp.get("/healthz")
def healthz() -> Response:
    runner = current_runner()
    try:
        reachable = runner.server_info() is not None
    except EdgeRefused:
        reachable = False
    return jsonify(
        {
            "status": "ok",
            "model": runner.model_name(),
            "draft_model": runner.config.draft_model,
            "server": runner.config.server,
            "server_reachable": reachable,
        }
    )


@bp.get("/v1/models")
def models() -> Response:
    name = current_runner().model_name()
    return jsonify(
        {"object": "list", "data": [{"id": name, "object": "model", "created": STARTED, "owned_by": "specdraft-edge"}]}
    )

"""Health and model listing: ``GET /healthz`` and OpenAI's ``GET /v1/models``.

Neither loads the model: ``loaded`` says whether a request has loaded it yet.
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from .protocol import responses
from .protocol.responses import answer
from .state import current_state

bp = Blueprint("health", __name__)


@bp.get("/healthz")
def healthz() -> Response:
    """``{"status": "ok", "model": served name, "loaded": bool}``."""
    state = current_state()
    return jsonify(answer(responses.Health, status="ok", model=state.config.model_name, loaded=state.loaded))


@bp.get("/v1/models")
def models() -> Response:
    """OpenAI's model list: the served model, then each of its aliases (answered by the same model)."""
    state = current_state()
    names = (state.config.model_name, *state.config.model_aliases)
    cards = [{"id": name, "object": "model", "created": state.started, "owned_by": "specdraft"} for name in names]
    return jsonify(answer(responses.Models, object="list", data=cards))

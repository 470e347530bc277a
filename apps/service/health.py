"""Health and model listing: ``GET /healthz`` and OpenAI's ``GET /v1/models``.

Neither loads the model: ``loaded`` says whether a request has loaded it yet. Serving an edge model
(``edge_model``: loaded at start), the name is the verify server's model and ``/healthz`` adds
``draft_model``, ``server`` and ``server_reachable``.
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from . import edge_model
from .protocol import responses
from .protocol.responses import answer
from .state import current_state

bp = Blueprint("health", __name__)


@bp.get("/healthz")
def healthz() -> Response:
    """``{"status": "ok", "model": served name, "loaded": bool}`` (module docstring)."""
    state = current_state()
    edge = edge_model.health(state) if edge_model.serves_edge(state.config) else {}
    name = edge_model.served_name(state)
    return jsonify(answer(responses.Health, status="ok", model=name, loaded=state.loaded, **edge))


@bp.get("/v1/models")
def models() -> Response:
    """OpenAI's model list: the served model, then each of its aliases (answered by the same model)."""
    state = current_state()
    names = (edge_model.served_name(state), *state.config.model_aliases)
    cards = [{"id": name, "object": "model", "created": state.started, "owned_by": "specdraft"} for name in names]
    return jsonify(answer(responses.Models, object="list", data=cards))

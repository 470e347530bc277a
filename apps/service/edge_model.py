"""Serving an edge model: the laptop's endpoint (``specdraft edge serve``, docs/edge.md) is this service
with ``endpoint_config(...)``, a ``ModelConfig`` on the edge backend (the local model drafts, a verify
server checks). Routes, requests, answers, errors and access are the service's; what differs is here:
answers name the verify server's model (``served_name``); ``check_supported`` refuses what needs
logits or several choices; a generation is an ``EdgeRun`` (one at a time), whose chunks carry
``source`` ("verified"/"unverified"), ``drafted`` and the round trips; a verify server that refuses the
session is a 502; ``/healthz`` adds the server's reachability (``health``).

Imports no torch: the edge package, numpy and the standard library (plus the local model's backend).
"""

from __future__ import annotations

from itertools import chain, islice
from typing import Any, Iterable, Iterator

from flask import Response, jsonify

from specdraft import ModelConfig
from specdraft.edge import EdgeRefused, EdgeResult, EdgeRun
from specdraft.edge.config import EdgeClientConfig, EdgeServerConfig
from specdraft.edge.target import EdgeModel

from . import sse
from .answer_format import Answer
from .config import ServiceConfig
from .limits import LimitConfig, RequestGuard, until_stopped
from .protocol.completions import CompletionRequest
from .protocol.errors import RequestError
from .state import ServiceState
from .structured_output import OutputPlan

PLAIN = OutputPlan()  # text only: no constraint, no tool calls


def endpoint_config(
    server: str,
    key: str,
    draft_model: str,
    *,
    local_backend: str = "auto",
    timeout_s: float = EdgeServerConfig.timeout_s,
    client: EdgeClientConfig = EdgeClientConfig(),
    **service: Any,
) -> ServiceConfig:
    """The laptop's endpoint: ``draft_model`` (a registry name or a path, on ``local_backend``) drafting for
    ``server`` (key ``key``, calls lost after ``timeout_s``); ``service``: other ``ServiceConfig`` fields
    (``max_tokens_limit``, ``default_max_tokens``, ``api_key_file``, ``allowed_hosts``, ...)."""
    edge = EdgeServerConfig(server, key, timeout_s, client, local_backend)
    defaults = {"serve_any_model_name": True, "drafter": "none", "limits": LimitConfig(max_concurrent=1)}
    model = ModelConfig(draft_model, device="cpu", backend="edge", edge=edge)
    return ServiceConfig(model=model, **{**defaults, **service})


def serves_edge(config: ServiceConfig) -> bool:
    """Whether ``config`` serves an edge model (the laptop's endpoint)."""
    return config.model.edge is not None


def _edge_model(state: ServiceState) -> EdgeModel:
    model = state.target()
    assert isinstance(model, EdgeModel), "serves_edge(config) holds"
    return model


def _server_info(state: ServiceState) -> dict[str, Any] | None:
    """The verify server's info call (None: out of reach, or refusing the session)."""
    try:
        return _edge_model(state).info()
    except EdgeRefused:
        return None


def served_name(state: ServiceState) -> str:
    """The name answers carry: the config's, for an edge model the verify server's while it answers."""
    info = _server_info(state) if serves_edge(state.config) else None
    return str(info["model"]) if info else state.config.model_name


def health(state: ServiceState) -> dict[str, Any]:
    """``/healthz``'s edge fields: the local model, the verify server, whether it answered its info call."""
    reachable = _server_info(state) is not None
    edge = state.config.model.edge
    server = edge.server if edge is not None else _edge_model(state).connection.url
    return {"draft_model": state.config.model_name, "server": server, "server_reachable": reachable}


def check_supported(req: CompletionRequest) -> None:
    """Refuse what an edge model cannot do (module docstring)."""
    if req.n != 1:
        raise RequestError("n > 1 is not supported by the edge endpoint; send one request per choice", "n")
    if req.generation.logprobs is not None:
        raise RequestError(
            "logprobs are not supported by the edge endpoint (the server sends back token ids only)", "logprobs"
        )
    if req.prediction is not None:
        raise RequestError("prediction is not supported by the edge endpoint (the local model drafts)", "prediction")
    if req.prompts is not None and len(req.prompts) != 1:
        raise RequestError("the edge endpoint takes one prompt per request", "prompt")
    if req.response_format is not None and req.response_format.get("type") != "text":
        raise RequestError(
            "structured outputs are not supported by the edge endpoint (the verify server sends back "
            "token ids only, no logits to constrain)",
            "response_format",
        )
    if req.tools is not None:
        raise RequestError(
            "tools are not supported by the edge endpoint (the verify server sends back token ids only, "
            "no logits to constrain a call)",
            "tools",
        )


def answer(
    state: ServiceState, prompt_ids: list[int], req: CompletionRequest, reply: Answer, guard: RequestGuard
) -> Response:
    """Generate ``req`` from ``prompt_ids`` on the served edge model and answer it (module docstring)."""
    run = EdgeRun(_edge_model(state), prompt_ids, req.generation)
    steps = run.steps()
    try:
        first = list(islice(steps, 1))  # opens the session: a refusal is still an error response here
    except EdgeRefused as error:
        raise _refused(error) from None
    pieces = until_stopped(chain(first, steps), guard)
    drafter = state.config.model_name
    if req.stream:
        return sse.response(_chunks(reply, run, pieces, len(prompt_ids), drafter, guard), guard)
    for _ in pieces:
        pass
    result = run.result()
    choice = reply.choice(0, result.text, PLAIN, result.finish_reason)
    return jsonify(reply.whole([choice], _usage(len(prompt_ids), result), speculation=_speculation(result, drafter)))


def _chunks(
    reply: Answer, run: EdgeRun, pieces: Iterable[Any], prompt_tokens: int, drafter: str, guard: RequestGuard
) -> Iterator[dict[str, Any]]:
    """The streamed answer (module docstring): a chunk per piece with its flags, then the last one."""
    deltas = reply.fmt.deltas(PLAIN)
    try:
        for piece in pieces:
            verified = piece.source == "verified"
            ms = run.round_trip_ms
            flags = {
                "unverified": not verified,
                "source": piece.source,
                "drafted": run.drafted_text(),
                "round_trip_ms": None if ms is None else round(ms, 2),
                "round_trips": run.stats.round_trips,
            }
            for delta in deltas.push(piece.text) or [deltas.final()]:
                yield reply.chunk(0, delta, **flags)
        result = run.result()
    except EdgeRefused as error:  # after the answer started (a later reconnection refused): end it with the error
        raise _refused(error) from None
    if guard.client_gone:
        return
    for delta in deltas.finish():
        yield reply.chunk(0, delta)
    usage, speculation = _usage(prompt_tokens, result), _speculation(result, drafter)
    yield reply.chunk(0, deltas.final(), result.finish_reason, usage=usage, speculation=speculation)


def _refused(error: EdgeRefused) -> RequestError:
    message = f"the verify server refused the session ({error.status}): {error.message}"
    return RequestError(message, None, 502, type="upstream_error")


def _usage(prompt_tokens: int, result: EdgeResult) -> dict[str, int]:
    n = len(result.token_ids)
    return {"prompt_tokens": prompt_tokens, "completion_tokens": n, "total_tokens": prompt_tokens + n}


def _speculation(result: EdgeResult, drafter: str) -> dict[str, Any]:
    return {"drafter": drafter, **result.stats.to_dict(), "verified": list(result.verified)}

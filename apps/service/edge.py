"""The edge verify server (``serve --edge``): a laptop drafts token trees, this server verifies them
in sessions that hold a KV cache (docs/edge.md, "The verify API"; ``edge_sessions``).

- ``GET /v1/edge/info``: the model, its tokenizer fingerprint, sizes, EOS ids and the session limits.
- ``POST /v1/edge/sessions``: ``prompt`` ids or ``messages`` (then ``prompt_token_ids`` in the answer),
  ``tokenizer`` (the client's ``Tokenizer.fingerprint()``), sampling settings.
- ``POST .../<id>/verify``: a draft tree ``tokens``/``parents`` (-1: the context). ``commit`` (default
  true) commits the accepted path and next token; with ``commit: false`` the client commits a path of
  its choosing by ``POST .../commit`` or as the next verify's ``previous``. Under sampling, per-node
  ``draft_probs`` (the whole distribution each node was drawn from) make the server accept by
  speculative sampling; without them it compares with its own positional draws (exact either way).
  ``context_length`` (the length the client believes the session holds) makes a retried call that
  was already applied a 409 instead of a second application.
- ``POST .../append``: the next user turn; ``DELETE .../<id>``: close it and free its cache.

Every route needs an API key (``g.principal.key_id`` owns the sessions). A bad call is a 4xx JSON
error (400 bad field, 403 another key's session, 404 unknown session, 409 tokenizer mismatch, a
commit out of turn or a stale ``context_length``, 429 too many sessions) and leaves the session as it
was. Only token ids and short lists cross the wire; forward passes run under the generation gate.
"""

from __future__ import annotations

import math
from contextlib import closing
from typing import Any

from flask import Blueprint, Response, current_app, g, jsonify, request

from specdraft import Draft

from .completions import chat_ids
from .edge_sessions import DraftRows, EdgeConfig, EdgeSession, EdgeSessionStore
from .limits import generating
from .protocol.edge import AppendBody, Commit, OpenSessionBody, VerifyBody
from .protocol.errors import RequestError, as_request_error, check_token_ids, describe, parse_json_body
from .protocol.types import Body
from .state import current_state

bp = Blueprint("edge", __name__, url_prefix="/v1/edge")
STORE = "specdraft.edge"


def install(app, config: EdgeConfig) -> None:
    """Register the blueprint with a fresh session store."""
    app.extensions[STORE] = EdgeSessionStore(config)
    app.register_blueprint(bp)


def _store() -> EdgeSessionStore:
    return current_app.extensions[STORE]


def _owner() -> str:
    principal = getattr(g, "principal", None)
    if principal is None:  # serve --edge refuses to start without keys; never serve sessions keyless
        raise RequestError(
            "edge sessions need an API key: start the server with --api-key-file", None, 401, "invalid_api_key"
        )
    return principal.key_id


def _body(model: type[Body]) -> Body:
    """The request's body, validated as ``model`` (``protocol.edge``)."""
    return model.parse(parse_json_body(request.get_data(cache=True)), current_state().config)


def _session(session_id: str) -> EdgeSession:
    return _store().get(session_id, _owner())


def _locked(session: EdgeSession) -> EdgeSession:
    if session.closed:  # closed between the lookup and the lock (idle sweep, DELETE)
        raise RequestError(f"edge session {session.id!r} was closed", None, 404, "session_not_found")
    return session


def _check_context(session: EdgeSession, expected: int | None) -> None:
    """A call that says how long the client believes the context is (``context_length``, before
    any ``previous`` commit) is refused when the session holds another length: a retried call whose
    first attempt was applied (its answer lost) cannot then be applied twice."""
    if expected is not None and expected != session.context_length:
        raise RequestError(
            f"the session holds {session.context_length} tokens, not {expected}: the client's view is out of date "
            "(a retried call already applied?); open a new session from the whole context",
            "context_length",
            409,
            "context_mismatch",
        )


@bp.get("/info")
def info() -> Response:
    _owner()
    model = current_state().target()
    config = _store().config
    return jsonify(
        {
            "object": "edge.info",
            "model": current_state().config.model_name,
            "backend": model.backend,
            "exact": model.exact,
            "tokenizer": model.tokenizer.fingerprint(),
            "vocab_size": model.vocab_size,
            "tokenizer_vocab_size": model.tokenizer.vocab_size,
            "max_length": config.session_length(model),
            "has_chat_template": model.has_chat_template,
            "max_sessions_per_key": config.max_sessions_per_key,
            **_limits(model),
        }
    )


def _limits(model) -> dict[str, Any]:
    """What a client must keep to, in the info call and a new session's answer."""
    config = _store().config
    return {
        "eos_token_ids": sorted(model.eos_token_ids),
        "max_draft_nodes": config.max_draft_nodes,
        "max_branches": _branches_limit(model),
        "idle_timeout_s": config.idle_timeout_s,
        "draft_probs_max_entries": config.max_draft_prob_entries,
    }


def _branches_limit(model) -> int:
    """The most branches a verification takes: the config's, capped by the target's (asked once)."""

    def ask() -> int:
        with closing(model.new_target()) as probe:
            return min(_store().config.max_branches, int(probe.max_branches))

    return current_state().once(STORE + ".branches", ask)


@bp.post("/sessions")
@generating
def open_session() -> tuple[Response, int]:
    owner = _owner()
    body = _body(OpenSessionBody)
    model = current_state().target()
    if body.tokenizer != model.tokenizer.fingerprint():
        raise RequestError(
            f"the client's tokenizer differs from the served model's ({current_state().config.model_name}): "
            "draft with a model that shares its tokenizer",
            "tokenizer",
            409,
            "tokenizer_mismatch",
        )
    sampling, seed = body.sampling_params(), body.seed
    if body.messages is not None:
        messages, served = [m.chat_message() for m in body.messages], current_state().config.model_name
        prompt = chat_ids(model, messages, served, instead="prompt token ids")
    else:
        assert body.prompt is not None  # OpenSessionBody: exactly one of the two
        prompt = body.prompt
    check_token_ids(prompt, model.tokenizer.vocab_size, "prompt")
    session = _store().open(model, owner, prompt, sampling, seed)
    answer = {
        "id": session.id,
        "object": "edge.session",
        "model": current_state().config.model_name,
        "prompt_tokens": len(prompt),
        "context_length": session.context_length,
        "max_length": session.max_length,
        "seed": session.seed,
        "forward_passes": session.forward_passes,
        **_limits(model),
    }
    if body.messages is not None:
        answer["prompt_token_ids"] = prompt
    return jsonify(answer), 201


def _draft(body: VerifyBody, model) -> Draft:
    tokens, parents = body.tokens, body.parents
    probs = None
    if body.draft_probs is not None:
        rows = draft_probs(
            body.draft_probs, tokens, parents, model.tokenizer.vocab_size, _store().config.max_draft_prob_entries
        )
        probs = DraftRows(rows, model.vocab_size)
    # a parent after its child, or a repeated sibling
    with as_request_error("parents", ValueError, prefix="the draft is not a valid tree: "):
        return Draft(tuple(tokens), tuple(parents), probs)


def draft_probs(
    value: Any, tokens: list[int], parents: list[int], vocabulary: int, limit: int
) -> list[tuple[list[int], list[float]]]:
    """The verify call's ``draft_probs`` validated (``RequestError`` otherwise): one (tokens,
    probabilities) per node, at most ``limit`` tokens each, renormalised to sum to 1."""
    param = "draft_probs"
    if not isinstance(value, list) or len(value) != len(tokens):
        raise RequestError(
            f"draft_probs must be a list with one entry per token ({len(tokens)}), got {describe(value)}", param
        )
    rows: list[tuple[list[int], list[float]]] = []
    for i, entry in enumerate(value):
        where = f"draft_probs[{i}]"
        if not isinstance(entry, dict):
            raise RequestError(f"{where} must be an object with tokens and probs, got {describe(entry)}", param)
        ids = entry.get("tokens")
        if not isinstance(ids, list) or not ids or not all(isinstance(t, int) and not isinstance(t, bool) for t in ids):
            raise RequestError(f"{where}.tokens must be a non-empty list of token ids, got {describe(ids)}", param)
        probs = entry.get("probs")
        if not isinstance(probs, list) or len(probs) != len(ids):
            raise RequestError(f"{where}.probs must be a list of {len(ids)} numbers, one per token", param)
        if len(ids) > limit:
            raise RequestError(f"{where} lists {len(ids)} tokens; this server takes at most {limit}", param)
        if len(set(ids)) != len(ids) or not all(0 <= t < vocabulary for t in ids):
            raise RequestError(f"{where}.tokens must be distinct token ids below {vocabulary}", param)
        if not all(
            not isinstance(p, bool) and isinstance(p, (int, float)) and math.isfinite(p) and 0 < p <= 1 for p in probs
        ):
            raise RequestError(f"{where}.probs must be numbers in (0, 1]", param)
        total = math.fsum(probs)
        if abs(total - 1.0) > 1e-4:
            raise RequestError(
                f"{where}.probs sum to {total:.6g}, not 1: send the whole distribution the token was drawn from", param
            )
        if tokens[i] not in ids:
            raise RequestError(
                f"{where} gives token {tokens[i]} (node {i}) no probability: it was not drawn from it", param
            )
        rows.append((ids, [float(p) / total for p in probs]))
    first: dict[int, int] = {}
    for i, parent in enumerate(parents):
        j = first.setdefault(parent, i)
        if rows[j] != rows[i]:
            raise RequestError(
                f"draft_probs[{i}] differs from draft_probs[{j}]: siblings must be draws from the same distribution",
                param,
            )
    return rows


@bp.post("/sessions/<session_id>/verify")
@generating
def verify(session_id: str) -> Response:
    session = _session(session_id)
    body = _body(VerifyBody)
    draft = _draft(body, session.model)
    previous = None if body.previous is None else (body.previous.path, body.previous.next_token)
    with session.lock:
        _check_context(_locked(session), body.context_length)
        outcome = session.verify(
            draft, body.commit is not False, previous, _store().config, _branches_limit(session.model)
        )
        return jsonify(
            {
                "accepted_path": outcome.path,
                "accepted_tokens": [draft.tokens[i] for i in outcome.path],
                "next_token": outcome.next_token,
                "choices": outcome.choices,
                "committed": outcome.committed,
                "context_length": session.context_length,
                "forward_passes": session.forward_passes,
            }
        )


@bp.post("/sessions/<session_id>/commit")
def commit(session_id: str) -> Response:
    session = _session(session_id)
    body = _body(Commit)
    with session.lock:
        _locked(session).commit(body.path, body.next_token)
        return jsonify({"context_length": session.context_length, "forward_passes": session.forward_passes})


@bp.post("/sessions/<session_id>/append")
@generating
def append(session_id: str) -> Response:
    session = _session(session_id)
    body = _body(AppendBody)
    with session.lock:
        _check_context(_locked(session), body.context_length)
        session.append(body.tokens, _store().config)
        return jsonify({"context_length": session.context_length, "forward_passes": session.forward_passes})


@bp.delete("/sessions/<session_id>")
def close(session_id: str) -> Response:
    _store().close(session_id, _owner())
    return jsonify({"id": session_id, "object": "edge.session", "deleted": True})

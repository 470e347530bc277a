"""``GET /openapi.json``: the OpenAPI 3.1 document of every route, built once per app for its own
``ServiceConfig`` (docs/service.md). Bodies and answers are the ``protocol`` models' schemas (the same
models validate the requests, so the document cannot drift from the validation); errors are the one
error body with their statuses; streams are server-sent events of a JSON payload or ``[DONE]``.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Any

from flask import Blueprint, Response, jsonify
from pydantic import BaseModel

from .config import ServiceConfig
from .protocol import openai_responses, responses
from .protocol.completions import ChatCompletionBody, TextCompletionBody
from .protocol.grammar import GrammarBody
from .protocol.openai_responses_request import ResponsesBody
from .protocol.rag import DocumentsBody, QueryBody
from .protocol.schema import Schema, json_schema
from .state import current_state

bp = Blueprint("openapi", __name__)
OPENAPI_VERSION = "3.1.0"
CACHE = "specdraft.openapi"

ERRORS = {
    400: "invalid request: the message says what is wrong and ``param`` names the field",
    401: "an API key is needed (the server was started with --api-key-file) or the key is not valid",
    403: "the key's scope does not allow this (a write with a read key), or a cross-site request with a body",
    404: "no such route, index or stored response",
    405: "the route does not take this method (``Allow`` lists the ones it takes)",
    409: "the index cannot be used by this server (another embedding model, or damaged files)",
    413: "the body (or the grammar text) is longer than this server accepts",
    415: "the body is not sent as Content-Type: application/json",
    421: "a server without keys answers only requests addressed to this machine (Host)",
    429: "the server is busy: too many generations running and waiting; retry after ``Retry-After`` seconds",
}
ANY = (401, 404, 405, 421)  # what every route may answer
BODY = (400, 403, 413, 415)  # what every route with a JSON body may answer also
GENERATING = (429,)  # routes that take a place among the generations
HEADERS = {
    401: {"WWW-Authenticate": {"schema": {"type": "string"}, "description": "Bearer"}},
    405: {"Allow": {"schema": {"type": "string"}, "description": "the methods the route takes"}},
    429: {"Retry-After": {"schema": {"type": "string", "pattern": "^[0-9]+$"}, "description": "seconds to wait"}},
}
SECURITY = [{"bearer": []}, {}]  # a key when the server has keys; none otherwise
CONVENTIONS = (
    "Request bodies are JSON objects (Content-Type: application/json). null counts as absent for every optional "
    "field; fields a schema does not name are ignored. Integers are JSON integers: 1, not 1.0 (a decimal number, "
    "refused where an integer is due, as OpenAI's API does). Rules across fields are checked by the server and stated "
    "in the fields' descriptions (max_tokens and max_completion_tokens; prompts x n; document ids unique in a request "
    "and new to the index)."
)


REQUESTS: dict[str, type[BaseModel]] = {
    "CompletionRequest": TextCompletionBody,
    "ChatCompletionRequest": ChatCompletionBody,
    "ResponsesRequest": ResponsesBody,
    "GrammarRequest": GrammarBody,
    "DocumentsRequest": DocumentsBody,
    "QueryRequest": QueryBody,
}
ANSWERS: dict[str, type[BaseModel]] = {
    "Completion": responses.Completion,
    "ChatCompletion": responses.ChatCompletion,
    "Response": openai_responses.ResponseObject,
    "ResponseDeleted": openai_responses.ResponseDeleted,
    "Grammar": responses.Grammar,
    "DocumentsAdded": responses.DocumentsAdded,
    "Answer": responses.QueryAnswer,
    "Indexes": responses.Indexes,
    "Health": responses.Health,
    "Models": responses.Models,
    "Error": responses.Error,
}
EVENTS: dict[str, type[BaseModel]] = {  # the payload of each event of a stream
    "CompletionEvent": responses.CompletionEvent,
    "ChatCompletionEvent": responses.ChatCompletionEvent,
    "ResponseEvent": openai_responses.StreamEvent,
    "AnswerEvent": responses.AnswerEvent,
}


def document(config: ServiceConfig) -> dict[str, Any]:
    """The OpenAPI document of a service running with ``config``."""
    components = {
        **{name: json_schema(model, config) for name, model in {**REQUESTS, **ANSWERS}.items()},
        **{name: event(json_schema(model, config)) for name, model in EVENTS.items()},
    }
    paths = {
        "/healthz": {"get": _get("health", "Whether the server is up and its model loaded", _json("Health"), False)},
        "/v1/models": {"get": _get("models", "OpenAI's model list: the one served model", _json("Models"))},
        "/v1/completions": {
            "post": _post("completions", "OpenAI-compatible text completion", "CompletionRequest", "Completion", True)
        },
        "/v1/chat/completions": {
            "post": _post("chat", "OpenAI-compatible chat completion", "ChatCompletionRequest", "ChatCompletion", True)
        },
        "/v1/responses": {
            "post": _post(
                "responses", "OpenAI's Responses API (run as a chat completion)", "ResponsesRequest", "Response", True
            )
        },
        "/v1/responses/{response_id}": {
            "get": _with_id(
                "response_id", _get("responses", "A stored response, as it was answered", _json("Response"))
            ),
            "delete": _with_id("response_id", _get("responses", "Forget a stored response", _json("ResponseDeleted"))),
        },
        "/v1/grammar/correct": {
            "post": _post(
                "grammar", "Correct a text's grammar (drafted from the text itself)", "GrammarRequest", "Grammar"
            )
        },
        "/v1/rag/documents": {
            "post": _post(
                "rag",
                "Add documents to an index (created when missing); needs a write key",
                "DocumentsRequest",
                "DocumentsAdded",
                errors=(409,),
            )
        },
        "/v1/rag/query": {
            "post": _post(
                "rag",
                "Answer a question from an index's passages",
                "QueryRequest",
                "Answer",
                True,
                (404, 409, *GENERATING),
            )
        },
        "/v1/rag/indexes": {"get": _get("rag", "The indexes this server holds", _json("Indexes"))},
        "/metrics": {"get": _get("metrics", "Prometheus metrics (text format 0.0.4)", _content("text/plain"))},
        "/openapi.json": {"get": _get("docs", "This document", _content("application/json", "object"), False)},
        "/demo/grammar": {"get": _get("demo", "The grammar correction page", _content("text/html"), False)},
        "/demo/rag": {"get": _get("demo", "The questions-over-your-documents page", _content("text/html"), False)},
        **(
            {"/demo/": {"get": _get("demo", "The edge demo page", _content("text/html"), False)}}
            if config.model.edge
            else {}
        ),
        "/static/{filename}": {"get": _static()},
    }
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "specdraft",
            "version": _version(),
            "description": "Lossless speculative decoding behind an OpenAI-compatible API, grammar correction and "
            f"RAG; serves {config.model_name!r}. " + CONVENTIONS,
        },
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "a key from --api-key-file (read or write scope)",
                }
            },
            "responses": {str(status): _error(status) for status in ERRORS},
        },
    }


@bp.get("/openapi.json")
def openapi() -> Response:
    """The document for this app's config (built once)."""
    state = current_state()
    return jsonify(state.once(CACHE, lambda: document(state.config)))


# --- building blocks ------------------------------------------------------------------------------
def _get(tag: str, summary: str, ok: dict[str, Any], secured: bool = True) -> dict[str, Any]:
    return _operation(tag, summary, ok, ANY if secured else tuple(s for s in ANY if s != 401), secured)


def _post(
    tag: str, summary: str, request: str, answer: str, stream: bool = False, errors: tuple[int, ...] = GENERATING
) -> dict[str, Any]:
    """A route taking the JSON body ``request`` and answering ``answer`` (``stream``: or its events)."""
    operation = _operation(tag, summary, _json(answer, stream), (*ANY, *BODY, *errors), secured=True)
    body = {"required": True, "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{request}"}}}}
    return {**operation, "requestBody": body}


def _operation(tag: str, summary: str, ok: dict[str, Any], errors: tuple[int, ...], secured: bool) -> dict[str, Any]:
    responses = {"200": ok, **{str(s): {"$ref": f"#/components/responses/{s}"} for s in sorted(set(errors))}}
    operation: dict[str, Any] = {"tags": [tag], "summary": summary, "responses": responses}
    if secured:
        operation["security"] = SECURITY
    return operation


def _error(status: int) -> dict[str, Any]:
    response: dict[str, Any] = {
        "description": ERRORS[status],
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }
    if status in HEADERS:
        response["headers"] = HEADERS[status]
    return response


def _json(name: str, stream: bool = False) -> dict[str, Any]:
    content = {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}}
    description = "the answer"
    if stream:  # with "stream": true; the schema is each event's, as OpenAPI 3.1 reads it
        content["text/event-stream"] = {"schema": {"$ref": f"#/components/schemas/{name}Event"}}
        description += "; with stream: true, server-sent events (data: {json}, ending with data: [DONE])"
    return {"description": description, "content": content}


def _content(media_type: str, json_type: str = "string") -> dict[str, Any]:
    return {"description": "the answer", "content": {media_type: {"schema": {"type": json_type}}}}


def _with_id(name: str, operation: dict[str, Any]) -> dict[str, Any]:
    """``operation`` on a route whose path holds ``name`` (a 404 when nothing has that name)."""
    parameter = {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
    return {**operation, "parameters": [parameter]}


def _static() -> dict[str, Any]:
    ok = {
        "description": "a file of the demo pages",
        "content": {t: {"schema": {"type": "string"}} for t in ("text/css", "text/javascript")},
    }
    operation = _operation("demo", "Scripts and styles of the demo pages", ok, (404, 405, 421), secured=False)
    return _with_id("filename", operation)


def event(payload: Schema) -> Schema:
    """One ``data:`` event of a stream (as OpenAPI 3.1 reads an event stream's schema): a JSON
    ``payload``, or the closing ``[DONE]``."""
    data = {
        "anyOf": [
            {"const": "[DONE]"},
            {"type": "string", "contentMediaType": "application/json", "contentSchema": payload},
        ]
    }
    return {"type": "object", "properties": {"data": data}, "required": ["data"]}


def _version() -> str:
    try:
        return version("specdraft")
    except PackageNotFoundError:
        return "0"

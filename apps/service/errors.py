"""JSON errors: every failure the service answers is ``{"error": {"message", "type", "param"}}``
(``protocol.errors.error_body``, with a ``code`` where there is one).

``type`` follows OpenAI's API: "invalid_request_error" for 4xx, "server_error" for 5xx. A
``RequestError`` (validation, access, the generation gate's 429, an edge session's refusal, a failure
upstream) keeps its status, ``param``, ``code`` and headers; any HTTP error (404, 405, 413, ...)
keeps its status and headers (``Allow`` for a 405); anything unexpected is logged and answered with
a 500 that reveals no internals; a failure of the serving engine behind an engine-backed target is a
502 with the engine's error. Never an HTML page. A stream that fails after it began ends with the
same body as an event (``sse``).
"""

from __future__ import annotations

from flask import Flask, Response, current_app, jsonify, request
from werkzeug.exceptions import HTTPException, MethodNotAllowed, NotFound, RequestEntityTooLarge

from specdraft.backends.engine.http import EngineError

from .protocol.errors import INVALID_REQUEST, SERVER_ERROR, RequestError, error_body

INTERNAL_ERROR_MESSAGE = "internal server error; see the server's log"


def register_error_handlers(app: Flask) -> None:
    app.register_error_handler(RequestError, error_response)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(EngineError, _engine_error)
    app.register_error_handler(Exception, _unexpected_error)


def error_response(error: RequestError) -> Response:
    """``error`` answered: its body, status and headers."""
    response = jsonify(error.body())
    response.status_code = error.status
    response.headers.update(error.headers)
    return response


def _http_error(error: HTTPException) -> Response:
    response = error.get_response()  # keeps the status and headers such as Allow
    code = error.code or 500
    body = error_body(_http_message(error), INVALID_REQUEST if code < 500 else SERVER_ERROR, None)
    response.data = current_app.json.dumps(body)
    response.content_type = "application/json"
    return response


def _http_message(error: HTTPException) -> str:
    if isinstance(error, NotFound):
        return f"no such endpoint: {request.path}"
    if isinstance(error, MethodNotAllowed):
        allowed = ", ".join(sorted(error.valid_methods or ()))
        return f"method {request.method} is not allowed on {request.path}; allowed: {allowed}"
    if isinstance(error, RequestEntityTooLarge):
        return f"the request body is larger than the limit of {current_app.config['MAX_CONTENT_LENGTH']} bytes"
    if (error.code or 500) >= 500:
        return INTERNAL_ERROR_MESSAGE
    return error.description or error.name


def _engine_error(error: EngineError) -> Response:
    """The serving engine behind an engine-backed target failed: a 502 that says what it did."""
    current_app.logger.warning("engine error on %s %s: %s", request.method, request.path, error)
    return error_response(RequestError(f"the serving engine failed: {error}", None, 502))


def _unexpected_error(error: Exception) -> Response:
    current_app.logger.exception("unhandled error on %s %s", request.method, request.path)
    return error_response(RequestError(INTERNAL_ERROR_MESSAGE, None, 500))

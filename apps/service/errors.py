"""JSON errors: every failure the service answers is ``{"error": {"message", "type", "param"}}``.

``type`` follows OpenAI's API: "invalid_request_error" for 4xx, "server_error" for 5xx. A
``RequestError`` from validation is a 400 (or the status it carries: a 413 for a grammar text over
the limit, 404/409 for an index) naming its ``param``; any HTTP error (404, 405, 413, ...)
keeps its status and headers (``Allow`` for a 405); anything unexpected is logged and answered with
a 500 that reveals no internals; a failure of the serving engine behind an engine-backed target is a
502 with the engine's error. Never an HTML page.
"""

from __future__ import annotations

from flask import Flask, Response, current_app, jsonify, request
from werkzeug.exceptions import HTTPException, MethodNotAllowed, NotFound, RequestEntityTooLarge

from specdraft.backends.engine.http import EngineError

from .protocol.errors import RequestError

INVALID_REQUEST = "invalid_request_error"
SERVER_ERROR = "server_error"
INTERNAL_ERROR_MESSAGE = "internal server error; see the server's log"


def error_body(message: str, type_: str, param: str | None = None) -> dict:
    return {"error": {"message": message, "type": type_, "param": param}}


def register_error_handlers(app: Flask) -> None:
    app.register_error_handler(RequestError, _request_error)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(EngineError, _engine_error)
    app.register_error_handler(Exception, _unexpected_error)


def _request_error(error: RequestError) -> tuple[Response, int]:
    return jsonify(error_body(error.message, INVALID_REQUEST, error.param)), error.status


def _http_error(error: HTTPException) -> Response:
    response = error.get_response()  # keeps the status and headers such as Allow
    code = error.code or 500
    body = error_body(_http_message(error), INVALID_REQUEST if code < 500 else SERVER_ERROR)
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


def _engine_error(error: EngineError) -> tuple[Response, int]:
    """The serving engine behind an engine-backed target failed: a 502 that says what it did."""
    current_app.logger.warning("engine error on %s %s: %s", request.method, request.path, error)
    return jsonify(error_body(f"the serving engine failed: {error}", SERVER_ERROR)), 502


def _unexpected_error(error: Exception) -> tuple[Response, int]:
    current_app.logger.exception("unhandled error on %s %s", request.method, request.path)
    return jsonify(error_body(INTERNAL_ERROR_MESSAGE, SERVER_ERROR)), 500

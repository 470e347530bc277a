"""A request the service refuses: ``RequestError`` (its ``body()`` the one error body of the service and
its streams), and how pydantic's ``ValidationError`` becomes one (``request_error``): a rule of ours
(``refuse``) carries its own wording, a template of ``{path}`` (``messages[0].content``) and
``{parent}``; pydantic's own errors are worded alike (``"{path} is required"``, ``"{path} must be an
integer, got number 1.5"``; ``null`` where a value is required reads as absent). ``check_token_ids``
is the one check of token ids; ``as_request_error`` turns a library's refusal of the input into a
``RequestError``; ``parse_json_body`` decodes a body that must be one JSON object of valid Unicode.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Any, Iterable, Iterator

from pydantic import ValidationError
from pydantic_core import PydanticCustomError

from .responses import Error, answer

INVALID_REQUEST, SERVER_ERROR = "invalid_request_error", "server_error"  # OpenAI's error types
REFUSED = "specdraft_refused"  # the error type of ``refuse``
TYPES = {  # pydantic's type errors -> what the field must be
    "string_type": "a string",
    "int_type": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "bool_type": "true or false",
    "list_type": "a list",
    "tuple_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "literal_error": None,  # worded from its expected values
}


class RequestError(ValueError):
    """A refused request, as the service answers it (``body``): ``param`` names the field at fault
    (None: the body as a whole); ``code`` is a machine-readable reason (None: none is sent); ``type``
    is OpenAI's, by default "invalid_request_error" for a 4xx and "server_error" for a 5xx (a failure
    upstream: the retriever, the verify server); ``headers`` go with the answer (``Retry-After``)."""

    def __init__(
        self,
        message: str,
        param: str | None = None,
        status: int = 400,
        code: str | None = None,
        type: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message, self.param, self.status, self.code = message, param, status, code
        self.type = type or (INVALID_REQUEST if status < 500 else SERVER_ERROR)
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return error_body(self.message, self.type, self.param, self.code)


def error_body(message: str, type: str, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    """The one error body: ``{"error": {"message", "type", "param"}}``, with ``code`` when there is one."""
    detail = {"message": message, "type": type, "param": param, **({} if code is None else {"code": code})}
    return answer(Error, error=detail)


@contextmanager
def as_request_error(
    param: str | None, *errors: type[BaseException], prefix: str = "", status: int = 400
) -> Iterator[None]:
    """Inside, an error of the types ``errors`` (a library's own check refusing the input) is raised
    as the ``RequestError`` ``prefix`` + its message, naming ``param``."""
    try:
        yield
    except errors as error:
        raise RequestError(f"{prefix}{error}", param, status) from None


def check_token_ids(tokens: Iterable[int], vocabulary: int, param: str) -> None:
    """Raise ``RequestError`` (code "invalid_token") unless every id of ``tokens`` is in ``[0, vocabulary)``."""
    for i, token in enumerate(tokens):
        if not 0 <= token < vocabulary:
            raise RequestError(
                f"{param}[{i}] is token id {token}, outside the model's vocabulary of {vocabulary} tokens",
                param,
                code="invalid_token",
            )


def refuse(message: str, param: str = "{path}", status: int = 400) -> PydanticCustomError:
    """The error a rule raises inside validation (``raise refuse(...)``); ``message`` and ``param``
    are templates of ``{path}`` and ``{parent}`` (module docstring)."""
    return PydanticCustomError(REFUSED, "{message}", {"message": message, "param": param, "status": status})


def request_error(error: ValidationError) -> RequestError:
    """The first of ``error``'s errors as the service words it (module docstring)."""
    first = error.errors(include_url=False)[0]
    loc = tuple(part for part in first["loc"] if isinstance(part, (str, int)))
    path, parent = place(loc), place(loc[:-1])
    ctx = first.get("ctx") or {}
    if first["type"] == REFUSED:
        param = ctx["param"].replace("{path}", path).replace("{parent}", parent)
        return RequestError(
            ctx["message"].replace("{path}", path).replace("{parent}", parent), param or None, ctx["status"]
        )
    return RequestError(_native_message(first["type"], path, first.get("input"), ctx), path or None)


def place(loc: tuple[str | int, ...]) -> str:
    """``("messages", 0, "content")`` -> ``messages[0].content``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _native_message(kind: str, path: str, value: Any, ctx: dict[str, Any]) -> str:
    where = path or "the request body"
    if kind == "missing" or (value is None and kind in TYPES):
        return f"{where} is required"
    if kind == "literal_error":
        return f"{where} must be {ctx.get('expected')}, got {describe(value)}"
    if kind in TYPES:
        return f"{where} must be {TYPES[kind]}, got {describe(value)}"
    if kind == "too_short":
        return (
            f"{where} must not be empty"
            if ctx.get("min_length") == 1
            else f"{where} must hold at least {ctx.get('min_length')} items"
        )
    if kind == "too_long":
        return f"{where} may hold at most {ctx.get('max_length')} items, got {ctx.get('actual_length')}"
    if kind in ("string_too_short", "string_too_long"):
        limit = ctx.get("min_length", ctx.get("max_length"))
        return (
            f"{where} must not be empty"
            if kind == "string_too_short" and limit == 1
            else f"{where} must have {'at least' if kind == 'string_too_short' else 'at most'} {limit} characters"
        )
    bounds = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=", "less_than": "<"}
    if kind in bounds:
        bound = next(iter(ctx.values()))
        return f"{where} must be {bounds[kind]} {bound}, got {describe(value)}"
    return f"{where}: {kind.replace('_', ' ')}"


def json_type(value: Any) -> str:
    """JSON's name for the type of ``value``: null, boolean, number, string, array or object."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, (list, tuple)) else "object"


def describe(value: Any, limit: int = 40) -> str:
    """``string "abc"``, ``number 1.5``, ... (the JSON text cut to ``limit`` characters)."""
    text = json.dumps(value, default=str)
    return f"{json_type(value)} {text if len(text) <= limit else text[: limit - 3] + '...'}"


def parse_json_body(data: bytes) -> dict[str, Any]:
    """Decode a request body that must be one JSON object (``RequestError`` otherwise)."""
    if not data.strip():
        raise RequestError("the request body is empty; send a JSON object")
    # UnicodeDecodeError and JSONDecodeError are ValueErrors
    with as_request_error(None, ValueError, RecursionError, prefix="the request body is not valid JSON: "):
        body = json.loads(data)
    if not isinstance(body, dict):
        raise RequestError(f"the request body must be a JSON object, got {json_type(body)}")
    try:
        _check_unicode(body, None)
    except RecursionError:
        raise RequestError("the request body is nested too deeply") from None
    return body


def _check_unicode(value: Any, param: str | None) -> None:
    """Reject strings that are not valid Unicode: JSON's ``\\ud800`` escapes decode to lone surrogates,
    which no tokenizer, index or log can encode. ``param`` is the path of ``value`` in the body."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as error:
            where = f"{param} holds" if param else "the body holds"
            raise RequestError(
                f"{where} invalid Unicode: a lone surrogate ({value[error.start]!r} at character {error.start}); "
                "send UTF-8 text (surrogate escapes only in valid pairs)",
                param,
            ) from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_unicode(key, param)
            _check_unicode(item, key if param is None else f"{param}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_unicode(item, f"{param}[{i}]" if param else f"[{i}]")

"""Reading one field of a JSON request body: the primitives every validator of the service shares.

Each reader raises ``RequestError(message, param)`` for a bad value: ``message`` says what is wrong
in words a client can act on, ``param`` names the field (``None`` when the body as a whole is
wrong); the HTTP layer turns it into a 400. ``null`` counts as absent (``ABSENT``) for every optional
field, as in OpenAI's API, and ``true``/``false`` are never accepted as numbers.
"""

from __future__ import annotations

import json
import math
from typing import Any, Mapping

ABSENT = object()  # a field the request did not set (or set to null)


class RequestError(ValueError):
    """The request is invalid; ``param`` names the field at fault (None: the body as a whole)."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


def required_string(body: Mapping[str, Any], name: str, allow_blank: bool = False) -> str:
    """The string field ``name``: present, a string, not empty (nor only whitespace, unless ``allow_blank``)."""
    value = body.get(name)
    if value is None:
        raise RequestError(f"{name} is required", name)
    if not isinstance(value, str):
        raise RequestError(f"{name} must be a string, got {describe(value)}", name)
    if not (value if allow_blank else value.strip()):
        raise RequestError(f"{name} must not be empty", name)
    return value


def integer(body: Mapping[str, Any], name: str, low: int, high: int | None = None) -> Any:
    """The integer field ``name`` in ``[low, high]`` (``high`` None: no upper bound), or ``ABSENT``."""
    value = body.get(name)
    if value is None:
        return ABSENT
    if isinstance(value, bool) or not isinstance(value, int):
        raise RequestError(f"{name} must be an integer, got {describe(value)}", name)
    if value < low or (high is not None and value > high):
        bounds = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise RequestError(f"{name} must be {bounds}, got {value}", name)
    return value


def number(body: Mapping[str, Any], name: str, low: float, high: float, low_open: bool = False) -> Any:
    """The finite number field ``name`` in ``[low, high]`` (``(low, high]`` if ``low_open``) as a float, or ``ABSENT``."""
    value = body.get(name)
    if value is None:
        return ABSENT
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RequestError(f"{name} must be a number, got {describe(value)}", name)
    if not math.isfinite(value):
        raise RequestError(f"{name} must be finite, got {value}", name)
    if not (low < value if low_open else low <= value) or value > high:
        raise RequestError(f"{name} must be in {'(' if low_open else '['}{low:g}, {high:g}], got {value:g}", name)
    return float(value)


def boolean(body: Mapping[str, Any], name: str) -> Any:
    """The boolean field ``name``, or ``ABSENT``."""
    value = body.get(name)
    if value is None:
        return ABSENT
    if not isinstance(value, bool):
        raise RequestError(f"{name} must be true or false, got {describe(value)}", name)
    return value


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
    return "array" if isinstance(value, list) else "object"


def describe(value: Any, limit: int = 40) -> str:
    """``string "abc"``, ``number 1.5``, ... (the JSON text cut to ``limit`` characters)."""
    text = json.dumps(value)
    return f"{json_type(value)} {text if len(text) <= limit else text[: limit - 3] + '...'}"

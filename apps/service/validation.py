"""Validating completion requests: pure functions from a request body to a ``CompletionRequest``.

Nothing here needs a model. Every function raises ``RequestError(message, param)`` for bad input:
``message`` says what is wrong in words a client can act on, ``param`` names the offending field
(``None`` when the body as a whole is wrong). The HTTP layer turns it into a 400.

Conventions: ``null`` counts as absent for every optional field (as in OpenAI's API), fields this
service does not know are ignored, and ``true``/``false`` are never accepted as numbers. Decoding
defaults (temperature, top_p, top_k, seed, stop) are ``GenerationConfig``'s own; only fields the
request sets are passed on.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Mapping

from specdraft import GenerationConfig
from specdraft.apps.model_pool import DrafterSpec

from .config import ServiceConfig

ROLES = ("system", "user", "assistant")
MAX_STOP_STRINGS = 4
MAX_TEMPERATURE = 2.0
MAX_SEED = 2**63 - 1  # a torch generator takes 64-bit seeds; draft models use seed + 1
_ABSENT = object()  # a field the request did not set (or set to null)


class RequestError(ValueError):
    """The request is invalid; ``param`` names the field at fault (None: the body as a whole)."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


@dataclass(frozen=True)
class ChatMessage:
    role: str  # one of ROLES
    content: str

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True)
class CompletionRequest:
    """A validated request. Exactly one of ``prompt`` (``/v1/completions``) and ``messages``
    (``/v1/chat/completions``) is set. ``generation.max_new_tokens`` is the request's
    ``max_tokens``; ``drafter`` is the request's or the service's default."""

    prompt: str | None
    messages: tuple[ChatMessage, ...] | None
    generation: GenerationConfig
    drafter: DrafterSpec
    stream: bool = False
    prediction: str | None = None  # OpenAI's predicted output: the text to draft from

    @property
    def chat(self) -> bool:
        return self.messages is not None

    @property
    def max_tokens(self) -> int:
        return self.generation.max_new_tokens


def parse_json_body(data: bytes) -> dict[str, Any]:
    """Decode a request body that must be one JSON object."""
    if not data.strip():
        raise RequestError("the request body is empty; send a JSON object")
    try:
        body = json.loads(data)
    except (ValueError, RecursionError) as error:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise RequestError(f"the request body is not valid JSON: {error}") from None
    if not isinstance(body, dict):
        raise RequestError(f"the request body must be a JSON object, got {_json_type(body)}")
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


def parse_completion_request(body: Mapping[str, Any], chat: bool, config: ServiceConfig) -> CompletionRequest:
    """Validate ``body`` for the chat endpoint (``chat``) or the text completion endpoint.

    ``config`` supplies the served model's name (a request may name it, and no other), the
    ``max_tokens`` limit and default, and the default drafter.
    """
    _check_model(body, config.model)
    prompt = None if chat else _prompt(body)
    messages = _messages(body) if chat else None
    settings: dict[str, Any] = {
        "max_new_tokens": _integer(body, "max_tokens", 1, config.max_tokens_limit),
        "temperature": _number(body, "temperature", 0.0, MAX_TEMPERATURE),
        "top_p": _number(body, "top_p", 0.0, 1.0, low_open=True),
        "top_k": _integer(body, "top_k", 0),
        "seed": _integer(body, "seed", 0, MAX_SEED),
        "stop": _stop(body),
    }
    if settings["max_new_tokens"] is _ABSENT:
        settings["max_new_tokens"] = config.default_max_tokens
    try:
        generation = GenerationConfig(**{k: v for k, v in settings.items() if v is not _ABSENT})
    except ValueError as error:  # the core's own checks, should the service's ever be looser
        raise RequestError(str(error)) from None
    stream = _boolean(body, "stream")
    return CompletionRequest(
        prompt=prompt,
        messages=messages,
        generation=generation,
        drafter=_drafter(body, config.drafter_spec),
        stream=False if stream is _ABSENT else stream,
        prediction=_prediction(body),
    )


def check_context_length(prompt_tokens: int, max_tokens: int, max_length: int, param: str) -> None:
    """Reject a request whose prompt plus ``max_tokens`` does not fit the model's context."""
    if prompt_tokens + max_tokens > max_length:
        raise RequestError(
            f"the prompt has {prompt_tokens} tokens and max_tokens is {max_tokens}: together "
            f"{prompt_tokens + max_tokens}, more than the model's context of {max_length} tokens",
            param,
        )


# --- fields ---------------------------------------------------------------------------------------
def _check_model(body: Mapping[str, Any], served: str) -> None:
    model = body.get("model")
    if model is None:
        return
    if not isinstance(model, str):
        raise RequestError(f"model must be a string, got {_describe(model)}", "model")
    if model != served:
        raise RequestError(f"model {model!r} is not served here; this server serves {served!r}", "model")


def required_string(body: Mapping[str, Any], name: str, allow_blank: bool = False) -> str:
    """The string field ``name``: present, a string, not empty (nor only whitespace, unless ``allow_blank``)."""
    value = body.get(name)
    if value is None:
        raise RequestError(f"{name} is required", name)
    if not isinstance(value, str):
        raise RequestError(f"{name} must be a string, got {_describe(value)}", name)
    if not (value if allow_blank else value.strip()):
        raise RequestError(f"{name} must not be empty", name)
    return value


def _prompt(body: Mapping[str, Any]) -> str:
    return required_string(body, "prompt", allow_blank=True)


def _prediction(body: Mapping[str, Any]) -> str | None:
    """``{"type": "content", "content": str | [{"type": "text", "text": str}, ...]}`` -> the text."""
    prediction = body.get("prediction")
    if prediction is None:
        return None
    if not isinstance(prediction, dict) or prediction.get("type") != "content":
        raise RequestError('prediction must be {"type": "content", "content": "..."}', "prediction")
    content = prediction.get("content")
    if isinstance(content, list):
        if not all(isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str) for part in content):
            raise RequestError('prediction.content parts must be {"type": "text", "text": "..."}', "prediction")
        content = "".join(part["text"] for part in content)
    if not isinstance(content, str):
        raise RequestError(f"prediction.content must be a string, got {_describe(content)}", "prediction")
    return content


def _messages(body: Mapping[str, Any]) -> tuple[ChatMessage, ...]:
    messages = body.get("messages")
    if messages is None:
        raise RequestError("messages is required", "messages")
    if not isinstance(messages, list):
        raise RequestError(f"messages must be a list, got {_describe(messages)}", "messages")
    if not messages:
        raise RequestError("messages must hold at least one message", "messages")
    return tuple(_message(m, f"messages[{i}]") for i, m in enumerate(messages))


def _message(message: Any, param: str) -> ChatMessage:
    if not isinstance(message, dict):
        raise RequestError(f"{param} must be an object with role and content, got {_describe(message)}", param)
    role, content = message.get("role"), message.get("content")
    if role not in ROLES:
        raise RequestError(f"{param}.role must be one of {', '.join(ROLES)}, got {_describe(role)}", f"{param}.role")
    if not isinstance(content, str):
        raise RequestError(f"{param}.content must be a string, got {_describe(content)}", f"{param}.content")
    return ChatMessage(role, content)


def _integer(body: Mapping[str, Any], name: str, low: int, high: int | None = None) -> Any:
    value = body.get(name)
    if value is None:
        return _ABSENT
    if isinstance(value, bool) or not isinstance(value, int):
        raise RequestError(f"{name} must be an integer, got {_describe(value)}", name)
    if value < low or (high is not None and value > high):
        bounds = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise RequestError(f"{name} must be {bounds}, got {value}", name)
    return value


def _number(body: Mapping[str, Any], name: str, low: float, high: float, low_open: bool = False) -> Any:
    value = body.get(name)
    if value is None:
        return _ABSENT
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RequestError(f"{name} must be a number, got {_describe(value)}", name)
    if not math.isfinite(value):
        raise RequestError(f"{name} must be finite, got {value}", name)
    if not (low < value if low_open else low <= value) or value > high:
        raise RequestError(f"{name} must be in {'(' if low_open else '['}{low:g}, {high:g}], got {value:g}", name)
    return float(value)


def _boolean(body: Mapping[str, Any], name: str) -> Any:
    value = body.get(name)
    if value is None:
        return _ABSENT
    if not isinstance(value, bool):
        raise RequestError(f"{name} must be true or false, got {_describe(value)}", name)
    return value


def _stop(body: Mapping[str, Any]) -> Any:
    stop = body.get("stop")
    if stop is None:
        return _ABSENT
    strings = [stop] if isinstance(stop, str) else stop
    if not isinstance(strings, list):
        raise RequestError(f"stop must be a string or a list of strings, got {_describe(stop)}", "stop")
    if len(strings) > MAX_STOP_STRINGS:
        raise RequestError(f"stop may hold at most {MAX_STOP_STRINGS} strings, got {len(strings)}", "stop")
    for i, s in enumerate(strings):
        if not isinstance(s, str) or not s:
            raise RequestError(f"stop[{i}] must be a non-empty string, got {_describe(s)}", "stop")
    return tuple(strings)


def _drafter(body: Mapping[str, Any], default: DrafterSpec) -> DrafterSpec:
    name = body.get("drafter")
    if name is None:
        return default
    if not isinstance(name, str):
        raise RequestError(f"drafter must be a string, got {_describe(name)}", "drafter")
    try:
        return DrafterSpec.parse(name)
    except ValueError as error:
        raise RequestError(str(error), "drafter") from None


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _describe(value: Any, limit: int = 40) -> str:
    """``string "abc"``, ``number 1.5``, ... (the JSON text cut to ``limit`` characters)."""
    text = json.dumps(value)
    return f"{_json_type(value)} {text if len(text) <= limit else text[: limit - 3] + '...'}"

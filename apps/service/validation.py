"""Validating completion requests: pure functions from a request body to a ``CompletionRequest``.

Nothing here needs a model. Every function raises ``RequestError(message, param)`` for bad input:
``message`` says what is wrong in words a client can act on, ``param`` names the offending field
(``None`` when the body as a whole is wrong). The HTTP layer turns it into a 400.

Conventions: ``null`` counts as absent for every optional field (as in OpenAI's API), fields this
service does not know are ignored (those it knows and does not support are refused, see
``openai_fields``), and ``true``/``false`` are never accepted as numbers. Decoding defaults
(temperature, top_p, top_k, seed, stop) are ``GenerationConfig``'s own; only fields the request sets
are passed on. The prompt's shapes are ``messages``'s, the OpenAI fields around it ``openai_fields``'s,
the field readers ``fields``'s (re-exported here for the other validators).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, Mapping

from specdraft import GenerationConfig
from specdraft.apps.model_pool import DrafterSpec

from . import openai_fields
from .config import ServiceConfig
from .fields import ABSENT as _ABSENT
from .fields import RequestError, required_string
from .fields import boolean as _boolean
from .fields import describe as _describe
from .fields import integer as _integer
from .fields import json_type as _json_type
from .fields import number as _number
from .messages import ChatMessage, Prompt, parse_messages, parse_prompts

__all__ = ["ChatMessage", "CompletionRequest", "Prompt", "RequestError", "check_context_length",
           "parse_completion_request", "parse_json_body", "required_string"]

MAX_STOP_STRINGS = 4
MAX_TEMPERATURE = 2.0
MAX_SEED = 2**63 - 1  # a torch generator takes 64-bit seeds; draft models use seed + 1


@dataclass(frozen=True)
class CompletionRequest:
    """A validated request. Exactly one of ``prompts`` (``/v1/completions``) and ``messages``
    (``/v1/chat/completions``) is set. ``generation.max_new_tokens`` is the request's
    ``max_tokens``; ``generation.logprobs`` the number of alternatives per token to report (None: no
    logprobs); ``drafter`` is the request's or the service's default. The answer has ``n`` choices
    per prompt; ``include_usage``: a streamed answer ends with a usage chunk."""

    prompts: tuple[Prompt, ...] | None
    messages: tuple[ChatMessage, ...] | None
    generation: GenerationConfig
    drafter: DrafterSpec
    stream: bool = False
    prediction: str | None = None  # OpenAI's predicted output: the text to draft from
    n: int = 1
    include_usage: bool = False

    @property
    def chat(self) -> bool:
        return self.messages is not None

    @property
    def prompt(self) -> str | None:
        """The text of a request with exactly one text prompt (None otherwise)."""
        if self.prompts is not None and len(self.prompts) == 1 and isinstance(self.prompts[0], str):
            return self.prompts[0]
        return None

    @property
    def max_tokens(self) -> int:
        return self.generation.max_new_tokens

    def choice_generation(self, sample: int) -> GenerationConfig:
        """The settings of a prompt's ``sample``-th choice (0 .. n-1): seeded sampling gives choice i
        the seed ``seed + i`` (modulo 2**63), so each choice is reproducible and they differ."""
        if sample == 0 or self.generation.seed is None:
            return self.generation
        return replace(self.generation, seed=(self.generation.seed + sample) % (MAX_SEED + 1))


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

    ``config`` supplies the model names a request may send (``openai_fields.check_model``), the
    ``max_tokens`` limit and default, and the default drafter.
    """
    openai_fields.check_model(body, config)
    openai_fields.check_unsupported(body)
    prompts = None if chat else parse_prompts(body)
    messages = parse_messages(body) if chat else None
    n = openai_fields.choice_count(body, 1 if prompts is None else len(prompts))
    logprobs = openai_fields.logprobs(body, chat)
    settings: dict[str, Any] = {
        "max_new_tokens": openai_fields.max_tokens(body, config.max_tokens_limit),
        "temperature": _number(body, "temperature", 0.0, MAX_TEMPERATURE),
        "top_p": _number(body, "top_p", 0.0, 1.0, low_open=True),
        "top_k": _integer(body, "top_k", 0),
        "seed": _integer(body, "seed", 0, MAX_SEED),
        "stop": _stop(body),
        "logprobs": _ABSENT if logprobs is None else logprobs,
    }
    if settings["max_new_tokens"] is _ABSENT:
        settings["max_new_tokens"] = config.default_max_tokens
    try:
        generation = GenerationConfig(**{k: v for k, v in settings.items() if v is not _ABSENT})
    except ValueError as error:  # the core's own checks, should the service's ever be looser
        raise RequestError(str(error)) from None
    stream = _boolean(body, "stream") is True
    return CompletionRequest(
        prompts=prompts,
        messages=messages,
        generation=generation,
        drafter=_drafter(body, config.drafter_spec),
        stream=stream,
        prediction=_prediction(body),
        n=n,
        include_usage=openai_fields.include_usage(body, stream),
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

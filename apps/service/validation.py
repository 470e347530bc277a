"""The completion request layer's entry points: ``parse_completion_request`` and ``check_context_length``.

A body is validated once, by ``protocol.completions``' models (``TextCompletionBody``,
``ChatCompletionBody``: the pydantic constraints, the config-dependent rules, the tools), and the
validated body is the request the endpoints run (``CompletionRequest``: its prompts, its
``GenerationConfig``, its drafter, ...; see ``protocol.completions``). Nothing here needs a model. Bad
input raises ``RequestError(message, param)`` (a 400, see ``protocol.errors``).
"""

from __future__ import annotations

from typing import Any, Mapping

from .config import ServiceConfig
from .protocol.completions import ChatCompletionBody, CompletionBody, TextCompletionBody
from .protocol.errors import RequestError, parse_json_body

__all__ = ["CompletionRequest", "RequestError", "check_context_length", "parse_completion_request", "parse_json_body"]

CompletionRequest = CompletionBody  # a validated body is the request


def parse_completion_request(body: Mapping[str, Any], chat: bool, config: ServiceConfig) -> CompletionRequest:
    """Validate ``body`` for the chat endpoint (``chat``) or the text completion endpoint, against
    ``config``'s model names, ``max_tokens`` limit and defaults."""
    return (ChatCompletionBody if chat else TextCompletionBody).parse(body, config)


def check_context_length(prompt_tokens: int, max_tokens: int, max_length: int, param: str) -> None:
    """Reject a request whose prompt plus ``max_tokens`` does not fit the model's context."""
    if prompt_tokens + max_tokens > max_length:
        raise RequestError(
            f"the prompt has {prompt_tokens} tokens and max_tokens is {max_tokens}: together "
            f"{prompt_tokens + max_tokens}, more than the model's context of {max_length} tokens",
            param,
        )

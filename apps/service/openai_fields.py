"""OpenAI request fields around the prompt: the model name, the token limit, ``n``, ``logprobs``,
``stream_options``, and the fields this server refuses rather than ignore.

- ``model``: the served model's name; one of ``ServiceConfig.model_aliases``; or any name when
  ``ServiceConfig.serve_any_model_name`` (so client defaults such as "gpt-3.5-turbo" work). The
  answer always comes from the served model and its ``model`` field names it. Otherwise a 400 that
  names the served model.
- ``max_tokens`` / ``max_completion_tokens`` (the name the current SDK and LangChain send): the same
  limit; both may be sent only with the same value.
- ``n``: 1..``MAX_N`` choices per prompt, at most ``MAX_CHOICES`` in all (prompts x n).
- ``logprobs``: chat: ``logprobs: true`` and ``top_logprobs`` 0..``MAX_TOP_LOGPROBS``; text
  completions: ``logprobs`` 0..``MAX_COMPLETION_LOGPROBS`` (the number of alternatives). Either way
  the result is the number of alternatives ``k`` per token (None: no logprobs).
- ``stream_options.include_usage``: a last chunk with ``usage`` and no choices (ignored unless streaming).
- Refused with a 400 (``check_unsupported``): tools and function calling, a ``response_format``
  other than text, non-zero ``presence_penalty``/``frequency_penalty``, a non-empty ``logit_bias``,
  ``echo``, ``best_of`` > 1, a ``suffix``, ``audio``, ``modalities`` other than text. Their neutral
  values (empty lists, zero, ``{"type": "text"}``, ...) pass. Fields this server does not know
  (``user``, ``store``, ``metadata``, ``service_tier``, ``parallel_tool_calls``, ...) are ignored.
"""

from __future__ import annotations

from typing import Any, Mapping

from .config import ServiceConfig
from .fields import ABSENT, RequestError, boolean, describe, integer, number

MAX_N = 8
MAX_CHOICES = 20
MAX_TOP_LOGPROBS = 20  # chat
MAX_COMPLETION_LOGPROBS = 5  # text completions
_NO_TOOLS = (None, "none", "auto")  # tool_choice / function_call values that ask for no tool call


def check_model(body: Mapping[str, Any], config: ServiceConfig) -> None:
    """Accept ``model`` when absent, the served model, an alias, or anything when configured so."""
    model = body.get("model")
    if model is None:
        return
    if not isinstance(model, str):
        raise RequestError(f"model must be a string, got {describe(model)}", "model")
    if model == config.model or model in config.model_aliases or config.serve_any_model_name:
        return
    aliases = f" (also answering to {', '.join(map(repr, config.model_aliases))})" if config.model_aliases else ""
    raise RequestError(f"model {model!r} is not served here; this server serves {config.model!r}{aliases}", "model")


def max_tokens(body: Mapping[str, Any], limit: int) -> Any:
    """``max_tokens`` or ``max_completion_tokens`` (1..``limit``), or ``ABSENT``."""
    legacy = integer(body, "max_tokens", 1, limit)
    current = integer(body, "max_completion_tokens", 1, limit)
    if legacy is not ABSENT and current is not ABSENT and legacy != current:
        raise RequestError(
            f"max_tokens ({legacy}) and max_completion_tokens ({current}) differ; send one of them",
            "max_completion_tokens",
        )
    return current if legacy is ABSENT else legacy


def choice_count(body: Mapping[str, Any], prompts: int) -> int:
    """``n`` (default 1), checked against the limits for a request of ``prompts`` prompts."""
    n = integer(body, "n", 1, MAX_N)
    n = 1 if n is ABSENT else n
    if prompts * n > MAX_CHOICES:
        raise RequestError(f"{prompts} prompts times n={n} is {prompts * n} choices; at most {MAX_CHOICES} per request", "n")
    return n


def logprobs(body: Mapping[str, Any], chat: bool) -> int | None:
    """The number of alternatives per token to report, or None when no logprobs are asked for."""
    if not chat:
        k = integer(body, "logprobs", 0, MAX_COMPLETION_LOGPROBS)
        return None if k is ABSENT else k
    wanted = boolean(body, "logprobs")
    top = integer(body, "top_logprobs", 0, MAX_TOP_LOGPROBS)
    if wanted is not True:
        if top is not ABSENT:
            raise RequestError("top_logprobs needs logprobs: true", "top_logprobs")
        return None
    return 0 if top is ABSENT else top


def include_usage(body: Mapping[str, Any], stream: bool) -> bool:
    """``stream_options.include_usage`` (False when not streaming: the answer then carries ``usage``)."""
    options = body.get("stream_options")
    if options is None:
        return False
    if not isinstance(options, dict):
        raise RequestError(f"stream_options must be an object, got {describe(options)}", "stream_options")
    wanted = options.get("include_usage")
    if wanted is not None and not isinstance(wanted, bool):
        raise RequestError(f"stream_options.include_usage must be true or false, got {describe(wanted)}", "stream_options")
    return stream and wanted is True


def check_unsupported(body: Mapping[str, Any]) -> None:
    """A 400 for every field that asks for something this server does not do (module docstring)."""
    for name in ("tools", "functions"):
        if body.get(name):
            raise RequestError(f"{name} are not supported: this server runs no tools (no function calling)", name)
    for name in ("tool_choice", "function_call"):
        if body.get(name) not in _NO_TOOLS:
            raise RequestError(f"{name} {describe(body[name])} is not supported: this server runs no tools", name)
    response_format = body.get("response_format")
    if response_format is not None and response_format != {"type": "text"}:
        raise RequestError(
            f'response_format {describe(response_format)} is not supported; only {{"type": "text"}} (no JSON mode)',
            "response_format",
        )
    for name in ("presence_penalty", "frequency_penalty"):
        if number(body, name, -2.0, 2.0) not in (ABSENT, 0.0):
            raise RequestError(f"{name} is not supported (it would change the target's own output); send 0 or omit it", name)
    if body.get("logit_bias"):
        raise RequestError("logit_bias is not supported (it would change the target's own output)", "logit_bias")
    if boolean(body, "echo") is True:
        raise RequestError("echo is not supported; the prompt is not repeated in the answer", "echo")
    if integer(body, "best_of", 1) not in (ABSENT, 1):
        raise RequestError("best_of > 1 is not supported; use n for several choices", "best_of")
    if body.get("suffix"):
        raise RequestError("suffix is not supported (no fill-in-the-middle)", "suffix")
    if body.get("audio") is not None:
        raise RequestError("audio is not supported: the served model answers in text", "audio")
    modalities = body.get("modalities")
    if modalities is not None and modalities != ["text"]:
        raise RequestError(f'modalities {describe(modalities)} is not supported; only ["text"]', "modalities")

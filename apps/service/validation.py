"""A completion request validated: ``parse_completion_request`` turns a body into a ``CompletionRequest``.

The body's shape is ``protocol.completions``' models (``TextCompletionBody``,
``ChatCompletionBody``); this module maps a validated body onto what the endpoints run: the prompts
or chat messages, a ``GenerationConfig``, the drafter. Nothing here needs a model. Bad input raises
``RequestError(message, param)`` (a 400, see ``protocol.errors``). Decoding defaults (temperature,
top_p, top_k, seed, stop) are ``GenerationConfig``'s own and only the fields a request sets are
passed on; ``max_tokens`` defaults to ``ServiceConfig.default_max_tokens``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

from specdraft import GenerationConfig
from specdraft.retrieval.drafter_registry import DrafterSpec, parse_drafter

from .config import ServiceConfig
from .protocol.chat import ChatMessage, Prompt, prompts_of
from .protocol.completions import MAX_SEED, ChatCompletionBody, TextCompletionBody
from .protocol.errors import RequestError, parse_json_body
from .protocol.structured import response_format_dict
from .structured_output import ToolRequest

__all__ = ["CompletionRequest", "RequestError", "check_context_length", "parse_completion_request", "parse_json_body"]


@dataclass(frozen=True)
class CompletionRequest:
    """A validated request. Exactly one of ``prompts`` (``/v1/completions``) and ``messages``
    (``/v1/chat/completions``) is set. ``generation.max_new_tokens`` is the request's
    ``max_tokens``; ``generation.logprobs`` the number of alternatives per token to report (None: no
    logprobs); ``drafter`` is the request's or the service's default. The answer has ``n`` choices
    per prompt; ``include_usage``: a streamed answer ends with a usage chunk. ``response_format``
    (OpenAI's shape, None: text) and ``tools`` (chat only; None: no tools field) say what the answer
    must be; ``structured_output.plan_output`` compiles them when the request runs."""

    prompts: tuple[Prompt, ...] | None
    messages: tuple[ChatMessage, ...] | None
    generation: GenerationConfig
    drafter: DrafterSpec
    stream: bool = False
    prediction: str | None = None  # OpenAI's predicted output: the text to draft from
    n: int = 1
    include_usage: bool = False
    response_format: Mapping[str, Any] | None = None
    tools: ToolRequest | None = None

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


def parse_completion_request(body: Mapping[str, Any], chat: bool, config: ServiceConfig) -> CompletionRequest:
    """Validate ``body`` for the chat endpoint (``chat``) or the text completion endpoint, against
    ``config``'s model names, ``max_tokens`` limit and defaults."""
    if chat:
        chat_body = ChatCompletionBody.parse(body, config)
        req, prompts, messages, logprobs = (
            chat_body,
            None,
            tuple(m.chat_message() for m in chat_body.messages),
            chat_body.alternatives,
        )
    else:
        text_body = TextCompletionBody.parse(body, config)
        req, prompts, messages, logprobs = text_body, prompts_of(text_body.prompt), None, text_body.logprobs
    settings: dict[str, Any] = {
        "max_new_tokens": config.default_max_tokens if req.token_limit is None else req.token_limit,
        "temperature": req.temperature,
        "top_p": req.top_p,
        "top_k": req.top_k,
        "seed": req.seed,
        "stop": None if req.stop is None else tuple([req.stop] if isinstance(req.stop, str) else req.stop),
        "logprobs": logprobs,
    }
    try:
        generation = GenerationConfig(**{k: v for k, v in settings.items() if v is not None})
    except ValueError as error:  # the core's own checks, should the service's ever be looser
        raise RequestError(str(error)) from None
    stream = req.stream is True
    tools = None
    if chat and (chat_body.tools or chat_body.tool_choice is not None):
        tools = ToolRequest(
            tuple(tool.to_dict() for tool in chat_body.tool_list),
            _tool_choice(chat_body),
            chat_body.parallel_tool_calls is not False,
        )
    return CompletionRequest(
        prompts=prompts,
        messages=messages,
        generation=generation,
        drafter=config.drafter_spec
        if req.drafter is None
        else parse_drafter(req.drafter, offers=config.completion_offers),
        stream=stream,
        prediction=None if req.prediction is None else req.prediction.text,
        n=req.n or 1,
        include_usage=stream and req.stream_options is not None and req.stream_options.include_usage is True,
        response_format=response_format_dict(req.response_format),
        tools=tools,
    )


def _tool_choice(body: ChatCompletionBody) -> Any:
    """``tool_choice`` in OpenAI's shape (None: absent)."""
    choice = body.tool_choice
    return choice if choice is None or isinstance(choice, str) else choice.model_dump()


def check_context_length(prompt_tokens: int, max_tokens: int, max_length: int, param: str) -> None:
    """Reject a request whose prompt plus ``max_tokens`` does not fit the model's context."""
    if prompt_tokens + max_tokens > max_length:
        raise RequestError(
            f"the prompt has {prompt_tokens} tokens and max_tokens is {max_tokens}: together "
            f"{prompt_tokens + max_tokens}, more than the model's context of {max_length} tokens",
            param,
        )

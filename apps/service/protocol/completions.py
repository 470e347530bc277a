"""The bodies of ``POST /v1/completions`` (``TextCompletionBody``) and ``POST /v1/chat/completions``
(``ChatCompletionBody``): OpenAI's fields and this server's extensions (docs/service.md; the field
types and rules are ``openai_fields``', the prompt's ``chat``'s, the tools' ``structured``'s).

A validated body (``parse``, with the server's config) is the request the endpoints run: it reads as
its prompts (``prompts``: text or token ids; ``messages``), a ``GenerationConfig`` (``generation``:
the fields a request sets, the rest the core's defaults, ``max_tokens`` by default
``ServiceConfig.default_max_tokens``), its drafter (the request's or the server's default),
``response_format`` and ``tools``. Fields whose wire name is one of those are stored under another
(``alias``: the wire name is what is read, documented and named in errors).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any, ClassVar, Mapping

from pydantic import ConfigDict, Field, PrivateAttr, StrictBool, StrictInt, StrictStr, model_validator

from specdraft import GenerationConfig
from specdraft.retrieval.drafter_registry import DrafterSpec, parse_drafter

from ..config import ServiceConfig
from .chat import ChatMessage, Messages, Prompt, PromptField, prompts_of
from .errors import RequestError, as_request_error, refuse
from .openai_fields import (
    COMPLETION_DRAFTER,
    MAX_CHOICES,
    MAX_COMPLETION_LOGPROBS,
    MAX_N,
    MAX_SEED,
    MAX_STOP_STRINGS,
    MAX_TOP_LOGPROBS,
    SERVED_MODEL,
    TARGETS_OWN,
    TOKEN_LIMIT,
    LegacyFunctionCall,
    LegacyFunctions,
    NoToolChoice,
    NoTools,
    Penalty,
    PredictionField,
    Sampling,
    StopStrings,
    StreamOptions,
)
from .structured import ResponseFormatBody, ToolChoice, ToolRequest, Tools, check_tools
from .types import Bounds, Neutral


class CompletionBody(Sampling):
    """The fields both completion endpoints read, and the request they make (module docstring)."""

    chat: ClassVar[bool] = False  # the chat endpoint's request

    model: Annotated[StrictStr, SERVED_MODEL] | None = None
    format_body: ResponseFormatBody | None = Field(
        None,
        alias="response_format",
        description="text, json_object (any JSON object) or json_schema: the answer "
        "follows the schema (constrained whatever strict says)",
    )
    # refused unless neutral
    functions: LegacyFunctions = None
    function_call: LegacyFunctionCall = None
    presence_penalty: Penalty | None = None
    frequency_penalty: Penalty | None = None
    logit_bias: Annotated[
        Any, Neutral.falsy("{path} is not supported (it would change the target's own output)", TARGETS_OWN)
    ] = None
    echo: (
        Annotated[
            StrictBool,
            Neutral.only(
                False, "{path} is not supported; the prompt is not repeated in the answer", "the prompt is not repeated"
            ),
        ]
        | None
    ) = None
    best_of: (
        Annotated[
            StrictInt, Bounds(1), Neutral.only(1, "{path} > 1 is not supported; use n for several choices", "use n")
        ]
        | None
    ) = None
    suffix: Annotated[
        Any, Neutral.falsy("{path} is not supported (no fill-in-the-middle)", "no fill-in-the-middle")
    ] = None
    audio: Annotated[
        Any,
        Neutral.null("{path} is not supported: the served model answers in text", "the served model answers in text"),
    ] = None
    modalities: Annotated[
        Any,
        Neutral(
            lambda v: v is None or v == ["text"],
            {"enum": [["text"], None]},
            '{path} {value} is not supported; only ["text"]',
            "the served model answers in text",
        ),
    ] = None
    # what to generate
    n_field: Annotated[StrictInt, Bounds(1, MAX_N)] | None = Field(
        None, alias="n", description=f"choices per prompt (at most {MAX_CHOICES} choices per request in all)"
    )
    max_tokens_field: Annotated[StrictInt, TOKEN_LIMIT] | None = Field(None, alias="max_tokens")
    max_completion_tokens: Annotated[StrictInt, TOKEN_LIMIT] | None = Field(
        None, description="the same as max_tokens (send one, or both with one value)"
    )
    stop: StopStrings | None = Field(
        None, description=f"a string or up to {MAX_STOP_STRINGS} strings that end the answer"
    )
    stream_field: StrictBool | None = Field(None, alias="stream", description="answer with server-sent events")
    stream_options: StreamOptions | None = None
    drafter_name: Annotated[StrictStr, COMPLETION_DRAFTER] | None = Field(None, alias="drafter")
    prediction_field: PredictionField | None = Field(None, alias="prediction")
    # the request, settled with the server's config (``parse``)
    _generation: GenerationConfig = PrivateAttr(default_factory=GenerationConfig)
    _drafter: DrafterSpec = PrivateAttr(default_factory=lambda: DrafterSpec("none"))

    @classmethod
    def parse(cls, body: Mapping[str, Any], config: ServiceConfig) -> CompletionBody:
        """``body`` validated for a server running with ``config``: the request (module docstring)."""
        req = super().parse(body, config)
        settings: dict[str, Any] = {
            "max_new_tokens": config.default_max_tokens if req.token_limit is None else req.token_limit,
            "temperature": req.temperature,
            "top_p": req.top_p,
            "top_k": req.top_k,
            "seed": req.seed,
            "stop": None if req.stop is None else tuple([req.stop] if isinstance(req.stop, str) else req.stop),
            "logprobs": req.alternatives,
        }
        with as_request_error(None, ValueError):  # the core's own checks, should the service's ever be looser
            req._generation = GenerationConfig(**{k: v for k, v in settings.items() if v is not None})
        name = req.drafter_name
        req._drafter = config.drafter_spec if name is None else parse_drafter(name, offers=config.completion_offers)
        return req

    def prompt_count(self) -> int:
        return 1

    @model_validator(mode="after")
    def _one_token_limit_and_few_choices(self) -> CompletionBody:
        legacy, current = self.max_tokens_field, self.max_completion_tokens
        if legacy is not None and current is not None and legacy != current:
            raise refuse(
                f"max_tokens ({legacy}) and max_completion_tokens ({current}) differ; send one of them",
                "max_completion_tokens",
            )
        prompts, n = self.prompt_count(), self.n
        if prompts * n > MAX_CHOICES:
            raise refuse(
                f"{prompts} prompts times n={n} is {prompts * n} choices; at most {MAX_CHOICES} per request", "n"
            )
        return self

    @property
    def token_limit(self) -> int | None:
        return self.max_completion_tokens if self.max_tokens_field is None else self.max_tokens_field

    # --- the request ------------------------------------------------------------------------------
    @property
    def alternatives(self) -> int | None:
        """The number of alternatives per token to report (None: no logprobs)."""
        return None

    @property
    def prompts(self) -> tuple[Prompt, ...] | None:
        """``/v1/completions``' prompts: texts and token ids (None: chat)."""
        return None

    @property
    def messages(self) -> tuple[ChatMessage, ...] | None:
        """``/v1/chat/completions``' messages (None: a text completion)."""
        return None

    @property
    def prompt(self) -> str | None:
        """The text of a request with exactly one text prompt (None otherwise)."""
        prompts = self.prompts
        return prompts[0] if prompts is not None and len(prompts) == 1 and isinstance(prompts[0], str) else None

    @property
    def tools(self) -> ToolRequest | None:
        """The tools, ``tool_choice`` and ``parallel_tool_calls`` (chat only; None: no tools field)."""
        return None

    @property
    def generation(self) -> GenerationConfig:
        """How to generate: ``max_new_tokens`` is ``max_tokens``, ``logprobs`` the alternatives per token."""
        return self._generation

    @property
    def drafter(self) -> DrafterSpec:
        """The request's drafter, or the server's default."""
        return self._drafter

    @property
    def max_tokens(self) -> int:
        return self._generation.max_new_tokens

    @property
    def n(self) -> int:
        """Choices per prompt."""
        return self.n_field or 1

    @property
    def stream(self) -> bool:
        return self.stream_field is True

    @property
    def include_usage(self) -> bool:
        """Whether a streamed answer ends with a usage chunk."""
        options = self.stream_options
        return self.stream and options is not None and options.include_usage is True

    @property
    def prediction(self) -> str | None:
        """OpenAI's predicted output: the text to draft from."""
        return None if self.prediction_field is None else self.prediction_field.text

    @property
    def response_format(self) -> dict[str, Any] | None:
        """``response_format`` in OpenAI's shape (None: text)."""
        return None if self.format_body is None else self.format_body.to_dict()

    def choice_generation(self, sample: int) -> GenerationConfig:
        """The settings of a prompt's ``sample``-th choice (0 .. n-1): seeded sampling gives choice i
        the seed ``seed + i`` (modulo 2**63), so each choice is reproducible and they differ."""
        generation = self._generation
        if sample == 0 or generation.seed is None:
            return generation
        return replace(generation, seed=(generation.seed + sample) % (MAX_SEED + 1))


class TextCompletionBody(CompletionBody):
    """OpenAI's text completion request: ``prompt`` is a string, a list of token ids, or a list of up to
    20 prompts (strings or lists of token ids), one choice (or ``n``) each."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"prompt": "def add(a, b):\n", "temperature": 0}]})

    prompt_field: PromptField = Field(
        alias="prompt", description="the text to continue: a string, token ids, or up to 20 of them (one choice each)"
    )
    tools_field: NoTools = Field(None, alias="tools")
    tool_choice: NoToolChoice = None
    logprobs: Annotated[StrictInt, Bounds(0, MAX_COMPLETION_LOGPROBS)] | None = Field(
        None, description="report the target's log-probabilities with this many alternatives per token"
    )

    def prompt_count(self) -> int:
        prompt = self.prompt_field
        return 1 if isinstance(prompt, str) or all(isinstance(t, int) for t in prompt) else len(prompt)

    @property
    def prompts(self) -> tuple[Prompt, ...]:
        return prompts_of(self.prompt_field)

    @property
    def alternatives(self) -> int | None:
        return self.logprobs


class ChatCompletionBody(CompletionBody):
    """OpenAI's chat completion request (``developer`` reaches the chat template as ``system``)."""

    chat: ClassVar[bool] = True

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"messages": [{"role": "user", "content": "Name three primary colours."}]}],
            # top_logprobs needs logprobs: true
            "dependentSchemas": {
                "top_logprobs": {
                    "anyOf": [
                        {"properties": {"top_logprobs": {"type": "null"}}},
                        {"properties": {"logprobs": {"const": True}}, "required": ["logprobs"]},
                    ]
                }
            },
        }
    )

    message_list: Messages = Field(alias="messages", description="through the model's chat template")
    tool_bodies: Tools | None = Field(
        None,
        alias="tools",
        description="function tools (names unique); their section of the chat template goes into the prompt",
    )
    tool_choice: ToolChoice | None = Field(
        None,
        description="none, auto (the default with tools), required, or a named function (one of "
        "tools); required and a named function need tools",
    )
    parallel_tool_calls: StrictBool | None = Field(
        None, description="false: at most one tool call per answer (default true)"
    )
    logprobs: StrictBool | None = Field(
        None, description="report the target's log-probabilities of the answer's tokens"
    )
    top_logprobs: Annotated[StrictInt, Bounds(0, MAX_TOP_LOGPROBS)] | None = Field(
        None, description="alternatives per token (needs logprobs: true)"
    )

    @model_validator(mode="after")
    def _rules_across_fields(self) -> ChatCompletionBody:
        if self.logprobs is not True and self.top_logprobs is not None:
            raise refuse("top_logprobs needs logprobs: true", "top_logprobs")
        check_tools(self.tool_bodies, self.tool_choice)
        return self

    @property
    def messages(self) -> tuple[ChatMessage, ...]:
        return tuple(m.chat_message() for m in self.message_list)

    @property
    def tools(self) -> ToolRequest | None:
        if not self.tool_bodies and self.tool_choice is None:
            return None
        choice = self.tool_choice
        return ToolRequest(
            tuple(tool.to_dict() for tool in self.tool_bodies or ()),
            choice if choice is None or isinstance(choice, str) else choice.model_dump(),
            self.parallel_tool_calls is not False,
        )

    @property
    def alternatives(self) -> int | None:
        return None if self.logprobs is not True else (self.top_logprobs or 0)


CompletionRequest = CompletionBody  # a validated body is the request the endpoints run


def parse_completion_request(body: Mapping[str, Any], chat: bool, config: ServiceConfig) -> CompletionRequest:
    """Validate ``body`` for the chat endpoint (``chat``) or the text completion endpoint, against
    ``config``'s model names, ``max_tokens`` limit and defaults (``RequestError`` when it is not valid)."""
    return (ChatCompletionBody if chat else TextCompletionBody).parse(body, config)


def check_context_length(prompt_tokens: int, max_tokens: int, max_length: int, param: str) -> None:
    """Reject a request whose prompt plus ``max_tokens`` does not fit the model's context."""
    if prompt_tokens + max_tokens > max_length:
        raise RequestError(
            f"the prompt has {prompt_tokens} tokens and max_tokens is {max_tokens}: together "
            f"{prompt_tokens + max_tokens}, more than the model's context of {max_length} tokens",
            param,
        )

"""The bodies of ``POST /v1/completions`` (``TextCompletionBody``) and ``POST /v1/chat/completions``
(``ChatCompletionBody``): OpenAI's fields around the prompt (``chat``), and this server's extensions.

- ``model``: the served model's name; one of ``ServiceConfig.model_aliases``; or any name when
  ``ServiceConfig.serve_any_model_name`` (so client defaults such as "gpt-3.5-turbo" work). The
  answer always comes from the served model and its ``model`` field names it.
- ``max_tokens`` / ``max_completion_tokens`` (the name the current SDK and LangChain send): one
  limit, 1..``ServiceConfig.max_tokens_limit``; both may be sent only with the same value.
- ``n``: 1..``MAX_N`` choices per prompt, at most ``MAX_CHOICES`` in all (prompts x n).
- ``logprobs``: chat: ``logprobs: true`` and ``top_logprobs`` 0..``MAX_TOP_LOGPROBS``; text
  completions: ``logprobs`` 0..``MAX_COMPLETION_LOGPROBS`` (the number of alternatives).
- ``stream_options.include_usage``: a last chunk with ``usage`` and no choices (ignored unless streaming).
- ``response_format`` (both endpoints; on ``/v1/completions`` an extension) and, on the chat
  endpoint, ``tools``, ``tool_choice`` and ``parallel_tool_calls``: see ``structured``.
- Refused with a 400 (``Neutral``): legacy function calling (``functions``, ``function_call``: send
  ``tools``), tools on the text endpoint, non-zero ``presence_penalty``/``frequency_penalty``, a
  non-empty ``logit_bias``, ``echo``, ``best_of`` > 1, a ``suffix``, ``audio``, ``modalities`` other
  than text. Their neutral values (empty lists, zero, ...) pass. Fields this server does not know
  (``user``, ``store``, ``metadata``, ``service_tier``, ...) are ignored.
- Extensions: ``drafter`` ("none", "prompt-lookup", "documents", "model:NAME"), ``top_k``, and
  OpenAI's ``prediction`` (the text to draft from).

Decoding defaults (temperature, top_p, top_k, seed, stop) are ``GenerationConfig``'s own; see
``validation`` for the ``CompletionRequest`` a body becomes.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from annotated_types import MaxLen, MinLen
from pydantic import BeforeValidator, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr, model_validator

from specdraft import SamplingParams
from specdraft.retrieval.drafter_registry import MODEL, drafter_names, parse_drafter, require

from ..config import ServiceConfig
from .chat import Messages, PromptField, TextPart
from .errors import describe, refuse
from .structured import FunctionTool, NamedToolChoice, ResponseFormat, ToolChoice, Tools, check_tools
from .types import FALSY, Bounds, ConfigRule, Neutral, RequestBody, in_range

MAX_N = 8
MAX_CHOICES = 20
MAX_TOP_LOGPROBS = 20  # chat
MAX_COMPLETION_LOGPROBS = 5  # text completions
MAX_STOP_STRINGS = 4
MAX_TEMPERATURE = 2.0
MAX_SEED = 2**63 - 1  # a torch generator takes 64-bit seeds; draft models use seed + 1


def served_models(config: ServiceConfig) -> list[str]:
    """The model names a request may give (``ServiceConfig.allows_model``)."""
    spec = config.drafter_spec
    return list(dict.fromkeys([config.model_name, *config.extra_models, *([spec.model] if spec.model else [])]))


def within(value: int, low: int, high: int | None) -> int:
    if value < low or (high is not None and value > high):
        raise refuse(f"{{path}} must be {in_range(low, high)}, got {value}")
    return value


def _served_model(name: str, config: ServiceConfig) -> str:
    if name == config.model_name or name in config.model_aliases or config.serve_any_model_name:
        return name
    aliases = f" (also answering to {', '.join(map(repr, config.model_aliases))})" if config.model_aliases else ""
    raise refuse(f"{{path}} {name!r} is not served here; this server serves {config.model_name!r}{aliases}")


def _model_names(config: ServiceConfig) -> dict[str, Any]:
    if config.serve_any_model_name:
        return {"description": f"any name: the answer always comes from {config.model_name!r}"}
    return {
        "enum": [config.model_name, *config.model_aliases],
        "description": "the served model (or one of its aliases)",
    }


def _drafter(name: str, config: ServiceConfig) -> str:
    try:
        require(parse_drafter(name, offers=config.completion_offers), config.completion_offers)
    except ValueError as error:
        raise refuse(str(error)) from None
    return name


def completion_drafters(config: ServiceConfig) -> list[str]:
    """The ``drafter`` values a request may give: the registry's names a completion offers (aliases
    too) and ``model:NAME`` for each model the server may load."""
    names = drafter_names(config.completion_offers, aliases=True)
    return [
        *(name for name in names if not name.startswith(f"{MODEL}:")),
        *(f"{MODEL}:{m}" for m in served_models(config)),
    ]


SERVED_MODEL = ConfigRule("completion_model", _served_model, _model_names)
TOKEN_LIMIT = ConfigRule(
    "max_tokens",
    lambda value, config: within(value, 1, config.max_tokens_limit),
    lambda config: {
        "minimum": 1,
        "maximum": config.max_tokens_limit,
        "description": f"tokens to generate at most (default {config.default_max_tokens})",
    },
)
COMPLETION_DRAFTER = ConfigRule(
    "completion_drafter",
    _drafter,
    lambda config: {
        "enum": completion_drafters(config),
        "description": f"extension: the drafter (default {config.drafter!r})",
    },
)


def _stop(stop: Any) -> Any:
    strings = [stop] if isinstance(stop, str) else stop
    if not isinstance(strings, list):
        raise refuse(f"{{path}} must be a string or a list of strings, got {describe(stop)}")
    if len(strings) > MAX_STOP_STRINGS:
        raise refuse(f"{{path}} may hold at most {MAX_STOP_STRINGS} strings, got {len(strings)}")
    for i, s in enumerate(strings):
        if not isinstance(s, str) or not s:
            raise refuse(f"{{path}}[{i}] must be a non-empty string, got {describe(s)}")
    return stop


def _include_usage(wanted: Any) -> Any:
    if not isinstance(wanted, bool):
        raise refuse(f"{{path}} must be true or false, got {describe(wanted)}", "{parent}")
    return wanted


def _prediction(prediction: Any) -> Any:
    if not isinstance(prediction, dict) or prediction.get("type") != "content":
        raise refuse('{path} must be {"type": "content", "content": "..."}')
    content = prediction.get("content")
    if isinstance(content, list):
        if not all(
            isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
            for part in content
        ):
            raise refuse('{path}.content parts must be {"type": "text", "text": "..."}')
    elif not isinstance(content, str):
        raise refuse(f"{{path}}.content must be a string, got {describe(content)}")
    return prediction


class StreamOptions(RequestBody):
    include_usage: Annotated[StrictBool, BeforeValidator(_include_usage)] | None = Field(
        None, description="end the stream with a chunk holding usage and no choices"
    )


class Prediction(RequestBody):
    """OpenAI's predicted output: the answer is drafted from it (the request's drafter is then not used)."""

    type: Literal["content"]
    content: Union[StrictStr, list[TextPart]]

    @property
    def text(self) -> str:
        return self.content if isinstance(self.content, str) else "".join(part.text for part in self.content)


TARGETS_OWN = "it would change the target's own output"
LEGACY = "legacy function calling: send tools"
LegacyFunctions = Annotated[
    Any, Neutral(lambda v: not v, FALSY, "{path} (legacy function calling) is not supported; send tools", LEGACY)
]
LegacyFunctionCall = Annotated[
    Any,
    Neutral(
        lambda v: v in (None, "none", "auto"),
        {"enum": ["none", "auto", None]},
        "{path} {value} (legacy function calling) is not supported; send tools and tool_choice",
        LEGACY,
    ),
]
CHAT_ONLY = "tools are for /v1/chat/completions"
NoTools = Annotated[
    Any,
    Neutral(lambda v: not v, FALSY, "{path} are for /v1/chat/completions; this endpoint continues a text", CHAT_ONLY),
]
NoToolChoice = Annotated[
    Any,
    Neutral(
        lambda v: v in (None, "none", "auto"),
        {"enum": ["none", "auto", None]},
        "{path} {value} is for /v1/chat/completions; this endpoint continues a text",
        CHAT_ONLY,
    ),
]
Penalty = Annotated[
    StrictFloat,
    Bounds(-2.0, 2.0),
    Neutral(
        lambda v: v == 0,
        {"enum": [0]},
        "{path} is not supported (it would change the target's own output); send 0 or omit it",
        TARGETS_OWN,
    ),
]
StopStrings = Annotated[
    Union[Annotated[StrictStr, MinLen(1)], Annotated[list[Annotated[StrictStr, MinLen(1)]], MaxLen(MAX_STOP_STRINGS)]],
    BeforeValidator(_stop),
]


class Sampling(RequestBody):
    """How to draw tokens (absent: ``GenerationConfig``'s greedy defaults); also an edge session's."""

    temperature: Annotated[StrictFloat, Bounds(0.0, MAX_TEMPERATURE)] | None = Field(
        None, description="0: greedy (default)"
    )
    top_p: Annotated[StrictFloat, Bounds(0.0, 1.0, low_open=True)] | None = Field(
        None, description="nucleus sampling mass"
    )
    top_k: Annotated[StrictInt, Bounds(0)] | None = Field(
        None, description="extension: sample among the k most likely tokens (0: all)"
    )
    seed: Annotated[StrictInt, Bounds(0, MAX_SEED)] | None = Field(
        None, description="makes a sampled answer reproducible (choice i gets seed + i)"
    )

    def sampling_params(self) -> SamplingParams:
        """The settings as the core takes them (absent: greedy)."""
        defaults = SamplingParams()
        return SamplingParams(
            defaults.temperature if self.temperature is None else self.temperature,
            defaults.top_p if self.top_p is None else self.top_p,
            defaults.top_k if self.top_k is None else self.top_k,
        )


class CompletionBody(Sampling):
    """The fields both completion endpoints read (module docstring)."""

    model: Annotated[StrictStr, SERVED_MODEL] | None = None
    response_format: ResponseFormat | None = Field(
        None,
        description="text, json_object (any JSON object) or json_schema: the answer "
        "follows the schema (constrained whatever strict says)",
    )
    # refused unless neutral
    functions: LegacyFunctions = None
    function_call: LegacyFunctionCall = None
    presence_penalty: Penalty | None = None
    frequency_penalty: Penalty | None = None
    logit_bias: Annotated[
        Any,
        Neutral(
            lambda v: not v, FALSY, "{path} is not supported (it would change the target's own output)", TARGETS_OWN
        ),
    ] = None
    echo: (
        Annotated[
            StrictBool,
            Neutral(
                lambda v: v is False,
                {"enum": [False]},
                "{path} is not supported; the prompt is not repeated in the answer",
                "the prompt is not repeated",
            ),
        ]
        | None
    ) = None
    best_of: (
        Annotated[
            StrictInt,
            Bounds(1),
            Neutral(lambda v: v == 1, {"enum": [1]}, "{path} > 1 is not supported; use n for several choices", "use n"),
        ]
        | None
    ) = None
    suffix: Annotated[
        Any, Neutral(lambda v: not v, FALSY, "{path} is not supported (no fill-in-the-middle)", "no fill-in-the-middle")
    ] = None
    audio: Annotated[
        Any,
        Neutral(
            lambda v: v is None,
            {"type": "null"},
            "{path} is not supported: the served model answers in text",
            "the served model answers in text",
        ),
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
    n: Annotated[StrictInt, Bounds(1, MAX_N)] | None = Field(
        None, description=f"choices per prompt (at most {MAX_CHOICES} choices per request in all)"
    )
    max_tokens: Annotated[StrictInt, TOKEN_LIMIT] | None = None
    max_completion_tokens: Annotated[StrictInt, TOKEN_LIMIT] | None = Field(
        None, description="the same as max_tokens (send one, or both with one value)"
    )
    stop: StopStrings | None = Field(
        None, description=f"a string or up to {MAX_STOP_STRINGS} strings that end the answer"
    )
    stream: StrictBool | None = Field(None, description="answer with server-sent events")
    stream_options: StreamOptions | None = None
    drafter: Annotated[StrictStr, COMPLETION_DRAFTER] | None = None
    prediction: Annotated[Prediction, BeforeValidator(_prediction)] | None = None

    def prompt_count(self) -> int:
        return 1

    @model_validator(mode="after")
    def _one_token_limit_and_few_choices(self) -> CompletionBody:
        legacy, current = self.max_tokens, self.max_completion_tokens
        if legacy is not None and current is not None and legacy != current:
            raise refuse(
                f"max_tokens ({legacy}) and max_completion_tokens ({current}) differ; send one of them",
                "max_completion_tokens",
            )
        prompts, n = self.prompt_count(), self.n or 1
        if prompts * n > MAX_CHOICES:
            raise refuse(
                f"{prompts} prompts times n={n} is {prompts * n} choices; at most {MAX_CHOICES} per request", "n"
            )
        return self

    @property
    def token_limit(self) -> int | None:
        return self.max_completion_tokens if self.max_tokens is None else self.max_tokens


class TextCompletionBody(CompletionBody):
    """OpenAI's text completion request: ``prompt`` is a string, a list of token ids, or a list of up to
    20 prompts (strings or lists of token ids), one choice (or ``n``) each."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"prompt": "def add(a, b):\n", "temperature": 0}]})

    prompt: PromptField = Field(
        description="the text to continue: a string, token ids, or up to 20 of them (one choice each)"
    )
    tools: NoTools = None
    tool_choice: NoToolChoice = None
    logprobs: Annotated[StrictInt, Bounds(0, MAX_COMPLETION_LOGPROBS)] | None = Field(
        None, description="report the target's log-probabilities with this many alternatives per token"
    )

    def prompt_count(self) -> int:
        return 1 if isinstance(self.prompt, str) or all(isinstance(t, int) for t in self.prompt) else len(self.prompt)


class ChatCompletionBody(CompletionBody):
    """OpenAI's chat completion request (``developer`` reaches the chat template as ``system``)."""

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

    messages: Messages = Field(description="through the model's chat template")
    tools: Tools | None = Field(
        None, description="function tools (names unique); their section of the chat template goes into the prompt"
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
        check_tools(self.tools, self.tool_choice)
        return self

    @property
    def effective_tool_choice(self) -> str | NamedToolChoice:
        """``tool_choice`` with OpenAI's default: ``auto`` when there are tools, ``none`` otherwise."""
        if self.tool_choice is not None:
            return self.tool_choice
        return "auto" if self.tools else "none"

    @property
    def tool_list(self) -> tuple[FunctionTool, ...]:
        return tuple(self.tools or ())

    @property
    def alternatives(self) -> int | None:
        """The number of alternatives per token to report (None: no logprobs)."""
        return None if self.logprobs is not True else (self.top_logprobs or 0)

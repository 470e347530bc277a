"""The OpenAI fields around a completion's prompt, as field types and rules: ``Sampling`` (temperature,
top_p, top_k, seed; also an edge session's), ``stop``, ``stream_options``, ``prediction``, the fields
refused unless neutral (``LegacyFunctions``, ``Penalty``, ``NoTools``, ...), and the rules that depend
on the server's config (``SERVED_MODEL``, ``TOKEN_LIMIT``, ``COMPLETION_DRAFTER``). The bodies that use
them, and what each field means, are ``completions``'.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from annotated_types import MaxLen, MinLen
from pydantic import BeforeValidator, Field, StrictBool, StrictFloat, StrictInt, StrictStr

from specdraft import SamplingParams
from specdraft.retrieval.drafter_registry import MODEL, drafter_names, parse_drafter, require

from ..config import ServiceConfig
from .chat import TextPart, joined
from .errors import describe, refuse
from .types import Bounds, ConfigRule, Neutral, RequestBody, within

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
        return joined(self.content, "")


TARGETS_OWN = "it would change the target's own output"
LEGACY = "legacy function calling: send tools"


def _no_call(message: str, why: str) -> Neutral:
    """Refused unless null, "none" or "auto" (a choice that calls nothing, or the model's own)."""
    return Neutral(lambda v: v in (None, "none", "auto"), {"enum": ["none", "auto", None]}, message, why)


LegacyFunctions = Annotated[Any, Neutral.falsy("{path} (legacy function calling) is not supported; send tools", LEGACY)]
LegacyFunctionCall = Annotated[
    Any, _no_call("{path} {value} (legacy function calling) is not supported; send tools and tool_choice", LEGACY)
]
CHAT_ONLY = "tools are for /v1/chat/completions"
NoTools = Annotated[
    Any, Neutral.falsy("{path} are for /v1/chat/completions; this endpoint continues a text", CHAT_ONLY)
]
NoToolChoice = Annotated[
    Any, _no_call("{path} {value} is for /v1/chat/completions; this endpoint continues a text", CHAT_ONLY)
]
Penalty = Annotated[
    StrictFloat,
    Bounds(-2.0, 2.0),
    Neutral.only(
        0, "{path} is not supported (it would change the target's own output); send 0 or omit it", TARGETS_OWN
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
        sent = {name: getattr(self, name) for name in ("temperature", "top_p", "top_k")}
        return SamplingParams(**{name: value for name, value in sent.items() if value is not None})


PredictionField = Annotated[Prediction, BeforeValidator(_prediction)]

"""The body of ``POST /v1/grammar/correct``: ``GrammarBody``, and the ``GrammarRequest`` it becomes.

``{"text", "model"?, "speculate"?: true, "compare"?: false}``. A text longer than
``ServiceConfig.max_grammar_chars`` is a 413 (not a 400); a ``model`` must be one a grammar request
may name (``grammar_models``, or one ``ServiceConfig.allows_model`` allows); without one the request
gets ``ServiceConfig.grammar_model``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Mapping

from pydantic import ConfigDict, Field, StrictBool, StrictStr

from ..config import ServiceConfig
from .errors import RequestError, refuse
from .openai_fields import served_models
from .types import ConfigRule, NotBlank, RequestBody


@dataclass(frozen=True)
class GrammarRequest:
    """A validated request: ``model`` is the request's (an allowed name) or the grammar model."""

    text: str
    model: str
    speculate: bool = True
    compare: bool = False  # also correct plainly and report the speedup


def grammar_models(config: ServiceConfig) -> tuple[str, ...]:
    """The models a grammar request may name: the served model, the grammar model (the default) and
    the extra models, each once (``ServiceConfig.allows_model`` also allows the default drafter's)."""
    return tuple(dict.fromkeys((config.model_name, config.grammar_model, *config.extra_models)))


def check_model_allowed(name: str, config: ServiceConfig) -> None:
    """Raise ``RequestError`` unless a request may name ``name``: a name of ``grammar_models`` or
    one ``ServiceConfig.allows_model`` allows."""
    if name != config.grammar_model and not config.allows_model(name):
        allowed = ", ".join(repr(m) for m in grammar_models(config))
        raise RequestError(f"model {name!r} is not served here (allowed: {allowed})", "model")


def _short_enough(text: str, config: ServiceConfig) -> str:
    if len(text) > config.max_grammar_chars:
        raise refuse(
            f"{{path}} has {len(text)} characters; this server corrects at most {config.max_grammar_chars} per request",
            status=413,
        )
    return text


def _allowed_model(name: str, config: ServiceConfig) -> str:
    try:
        check_model_allowed(name, config)
    except RequestError as error:
        raise refuse(error.message) from None
    return name


GRAMMAR_TEXT = ConfigRule("grammar_text", _short_enough, lambda config: {"maxLength": config.max_grammar_chars})
GRAMMAR_MODEL = ConfigRule(
    "grammar_model",
    _allowed_model,
    lambda config: {
        "enum": list(dict.fromkeys([*grammar_models(config), *served_models(config)])),
        "description": f"default {config.grammar_model!r}",
    },
)


class GrammarBody(RequestBody):
    """Correct a text's grammar (``maxLength``: a longer text is a 413, not a 400)."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"text": "She go to school every days.", "compare": True}]}
    )

    text: Annotated[StrictStr, NotBlank(), GRAMMAR_TEXT] = Field(description="the text to correct")
    model: Annotated[StrictStr, GRAMMAR_MODEL] | None = None
    speculate: StrictBool | None = Field(None, description="default true; false decodes plainly (the same answer)")
    compare: StrictBool | None = Field(
        None, description="default false; true also corrects plainly and reports the speedup"
    )


def parse_grammar_request(body: Mapping[str, Any], config: ServiceConfig) -> GrammarRequest:
    """Validate ``body`` against ``config``'s limits and models (``RequestError`` when it is not valid)."""
    req = GrammarBody.parse(body, config)
    return GrammarRequest(
        req.text,
        config.grammar_model if req.model is None else req.model,
        req.speculate is not False,
        req.compare is True,
    )

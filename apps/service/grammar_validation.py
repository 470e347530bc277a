"""Validating grammar-correction requests: a pure function from a request body to a ``GrammarRequest``.

Nothing here needs a model. Bad input raises ``RequestError(message, param)`` (a 400); a text longer
than ``ServiceConfig.max_grammar_chars`` raises ``TextTooLong`` (a 413, see ``grammar``). The
conventions are ``validation``'s: ``null`` counts as absent, unknown fields are ignored, and only
``true``/``false`` are booleans.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from .config import ServiceConfig
from .validation import _ABSENT, RequestError, _boolean, _describe, required_string


class TextTooLong(RequestError):
    """The text is longer than the service corrects in one request (answered with a 413)."""


@dataclass(frozen=True)
class GrammarRequest:
    """A validated request: ``model`` is the request's (an allowed name) or the grammar model."""

    text: str
    model: str
    speculate: bool = True
    compare: bool = False  # also correct plainly and report the speedup


def parse_grammar_request(body: Mapping[str, Any], config: ServiceConfig) -> GrammarRequest:
    """Validate ``{"text", "model"?, "speculate"?, "compare"?}`` against ``config``'s limits and
    models; without ``model`` the request gets ``config.grammar_model``."""
    speculate, compare = _boolean(body, "speculate"), _boolean(body, "compare")
    return GrammarRequest(
        text=_text(body, config.max_grammar_chars),
        model=_model(body, config),
        speculate=True if speculate is _ABSENT else speculate,
        compare=False if compare is _ABSENT else compare,
    )


def grammar_models(config: ServiceConfig) -> tuple[str, ...]:
    """The models a grammar request may name: the served model, the grammar model (the default) and
    the extra models, each once (``ServiceConfig.allows_model`` also allows the default drafter's)."""
    return tuple(dict.fromkeys((config.model, config.grammar_model, *config.extra_models)))


def check_model_allowed(name: str, config: ServiceConfig) -> None:
    """Raise ``RequestError`` unless a request may name ``name``: a name of ``grammar_models`` or
    one ``ServiceConfig.allows_model`` allows."""
    if name != config.grammar_model and not config.allows_model(name):
        allowed = ", ".join(repr(m) for m in grammar_models(config))
        raise RequestError(f"model {name!r} is not served here (allowed: {allowed})", "model")


def _text(body: Mapping[str, Any], limit: int) -> str:
    text = required_string(body, "text")
    if len(text) > limit:
        raise TextTooLong(f"text has {len(text)} characters; this server corrects at most {limit} per request", "text")
    return text


def _model(body: Mapping[str, Any], config: ServiceConfig) -> str:
    model = body.get("model")
    if model is None:
        return config.grammar_model
    if not isinstance(model, str):
        raise RequestError(f"model must be a string, got {_describe(model)}", "model")
    check_model_allowed(model, config)
    return model

"""Rendering a model's Jinja chat template the way transformers' ``apply_chat_template`` does.

Backends that read the template from a GGUF file (llama.cpp) use this, so that a prompt has the
same text, and so the same tokens, on every backend: a sandboxed environment with ``trim_blocks``
and ``lstrip_blocks``, the ``loopcontrols`` extension, a ``tojson`` filter that keeps non-ASCII
text, and the ``raise_exception`` and ``strftime_now`` globals templates rely on.
"""

from __future__ import annotations

import json
from datetime import datetime
from functools import lru_cache
from typing import Any, Sequence


def _raise_exception(message: str) -> None:
    from jinja2.exceptions import TemplateError

    raise TemplateError(message)


def _tojson(
    value: Any, ensure_ascii: bool = False, indent: int | None = None, separators: Any = None, sort_keys: bool = False
) -> str:
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


@lru_cache(maxsize=16)
def _compiled(template: str) -> Any:
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env.from_string(template)


def render_chat(
    template: str, messages: Sequence[dict], special_tokens: dict[str, str], tools: Sequence[dict] | None = None
) -> str:
    """The template's text for ``messages`` with the generation prompt added (where the assistant's
    answer starts). ``special_tokens``: ``bos_token``, ``eos_token``, ... as text. ``tools``: OpenAI's
    function tools, given to the template as ``tools`` (None: the template gets no ``tools``).
    Raises ``jinja2.TemplateError`` when the template rejects the messages."""
    context: dict[str, Any] = {"messages": list(messages), "add_generation_prompt": True, **special_tokens}
    if tools is not None:
        context["tools"] = list(tools)
    return _compiled(template).render(**context)

"""Which tool-call format a model writes: the family its chat template belongs to.

``FORMATS`` lists the families in the order they are asked (``ToolCallFormat.recognises``: the
markers of the family in the template text); ``format_for_template`` returns the first that recognises
the template, or ``DEFAULT`` (Hermes, Qwen2.5's) when none does or there is no template. A new family
is one module defining a ``ToolCallFormat``, and its name in ``FORMATS``.

``format_for_model`` is the format of a loaded model (``Model``): the service and the benchmark
build their call grammar and read their replies with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .format import ToolCallFormat
from .hermes import HERMES
from .llama3 import LLAMA3
from .mistral import MISTRAL

if TYPE_CHECKING:
    from ..model import Model

FORMATS: tuple[ToolCallFormat, ...] = (HERMES, LLAMA3, MISTRAL)
DEFAULT = HERMES


def format_for_template(template: str | None) -> ToolCallFormat:
    """The format of the chat template ``template`` (its Jinja text; None: a model without one)."""
    if template:
        for candidate in FORMATS:
            if candidate.recognises(template):
                return candidate
    return DEFAULT


def format_by_name(name: str) -> ToolCallFormat:
    """The registered format called ``name`` ("hermes", "llama3", "mistral", ...)."""
    for candidate in FORMATS:
        if candidate.name == name:
            return candidate
    raise ValueError(f"no tool-call format {name!r}; the formats are {', '.join(f.name for f in FORMATS)}")


def format_for_model(model: "Model") -> ToolCallFormat:
    """The format of ``model``'s chat template (``format_for_template``); without one, the default."""
    return format_for_template(model.chat_template)

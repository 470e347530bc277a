"""ToolCallFormat: one model family's way of writing tool calls, as its chat template describes it.

A format holds everything that depends on the family, so nothing else names its tags:

- ``markers``: texts whose presence in a chat template marks the family (``recognises``; the chooser,
  ``choose.format_for_template``, asks each registered format in turn);
- ``tags``: the tags its calls are written with, which the grammar names as tokens where the
  vocabulary has them as single tokens (``tags_are_tokens``);
- ``format_calls``: a reply's calls as the template replays them in a history;
- ``constraint``: the grammar ``tool_choice`` "required" or a named function decodes under (built
  from ``grammar``'s shared pieces with ``specdraft.constrained.Constraint.lark``);
- ``stream`` / ``parse``: the reply read as content and calls, piece by piece or whole (one reading:
  ``parse`` is the stream fed whole);
- ``untagged``: the reader of a reply that is nothing but untagged calls (None: the family reads none);
- ``new_call_id``: a fresh call id in the form the template accepts back.

The text a reader sees is the model's tokens decoded with special tokens left out (``Tokenizer.decode``),
so a tag that is a special token (Llama 3's ``<|python_tag|>``, Mistral's ``[TOOL_CALLS]``) may be
missing from it: formats read their calls with or without such a tag. (Qwen's ``<tool_call>`` is an
added token that is not special: it stays in the text.)

A family is one module defining one instance, listed in ``choose.FORMATS``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection
from typing import Callable, Sequence

from ..constrained import Constraint
from ..model import Tokenizer
from .grammar import is_token
from .parse import ParsedReply, read_reply
from .spec import ToolChoice, ToolSpec
from .stream import CallStream, new_call_id
from .untagged import UntaggedCalls


class ToolCallFormat(ABC):
    """One family's tool-call format (module docstring). Instances are immutable and shared."""

    name: str  # "hermes", "llama3", ...
    markers: tuple[str, ...]  # any one of them in a chat template marks the family
    tags: tuple[str, ...]  # the tags a constrained call is written with (may be none)

    def recognises(self, template: str) -> bool:
        """Whether the chat template ``template`` is this family's."""
        return any(marker in template for marker in self.markers)

    def tags_are_tokens(self, tokenizer: Tokenizer) -> bool:
        """Whether every tag is one token of ``tokenizer`` (the grammar then names them as tokens)."""
        return all(is_token(tag, tokenizer) for tag in self.tags)

    @abstractmethod
    def format_calls(self, calls: Sequence[tuple[str, str]]) -> str:
        """A reply made of ``calls`` (``(name, arguments' JSON text)`` each) as the chat template writes
        it (what the grammar admits where the family can write that many)."""

    @abstractmethod
    def constraint(
        self,
        tools: Sequence[ToolSpec],
        choice: ToolChoice,
        parallel: bool = True,
        tokenizer: Tokenizer | None = None,
    ) -> Constraint:
        """The grammar of the calls ``choice`` ("required" or "function") allows: one call of any of
        ``tools`` (several when ``parallel`` and the family can write several), or exactly one call of
        the named function. ``tokenizer``: the target's, to name the tags as its tokens (None: the tags
        as text). Raises ``ValueError`` for an unconstrained choice, ``ToolError`` for a choice the
        tools cannot meet."""

    @abstractmethod
    def stream(self, tool_names: Collection[str] | None = None, new_id: Callable[[], str] | None = None) -> CallStream:
        """A fresh reader of one reply. ``tool_names``: the request's tools in auto mode (untagged calls
        are then read as calls where the family allows; None: the reply is constrained or tagged calls
        only); ``new_id``: makes call ids (None: ``new_call_id``)."""

    @abstractmethod
    def untagged(self, tool_names: Collection[str] | None) -> UntaggedCalls | None:
        """A fresh reader of a reply made of untagged calls of ``tool_names`` (None: any name), or None
        when the family reads no such reply."""

    def new_call_id(self) -> str:
        """A fresh call id (OpenAI's form unless the family's template needs another)."""
        return new_call_id()

    def parse(
        self, text: str, tool_names: Collection[str] | None = None, new_id: Callable[[], str] | None = None
    ) -> ParsedReply:
        """The whole reply ``text`` as content and calls: what ``stream`` gives for it."""
        return read_reply(self.stream(tool_names, new_id), text)

    def __repr__(self) -> str:
        return f"<ToolCallFormat {self.name}>"

"""Mistral's ``[TOOL_CALLS]`` tool-call format (``MISTRAL``), as the chat templates of Mistral 7B
Instruct v0.3, Mistral Nemo and Mistral Small (tokenizers v3 to v7) describe it.

The template lists the tools in ``[AVAILABLE_TOOLS]`` before the last user message and replays an
assistant message's calls as ``[TOOL_CALLS]`` and one JSON list, then the end of sequence::

    [TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "a1b2c3d4e"}]</s>

(``mistral_common`` writes the same; the SentencePiece tokenizers put a space after the tag). Each
call's ``id`` is 9 letters or digits, which the template checks when it replays a history, so this
format's call ids (``new_call_id``) are of that form. ``[TOOL_CALLS]`` is a special (control) token:
decoded text usually lacks it, so the reader takes the list with or without it.

The grammar::

    start: <[TOOL_CALLS]> "[" call (", " call)* "]"      # one call only without parallel calls
    call: "{\\"name\\": " (fn_0 | fn_1 | ...) "}"

(``grammar.function_rules``; the tag as its token where the vocabulary has it, else as text; the
model's own ids are not asked for). The reply is read as calls when it is nothing but such a list (or
such objects; an ``"id"`` key allowed, and ignored; optionally in a ```json fence); anything else is
content. Calls are given whole when the reply ends. Text before the calls is not read (the tag is
not in the decoded text to find it). Recognised by ``[TOOL_CALLS]`` in the template, unless it also
has ``[ARGS]`` (the later ``[TOOL_CALLS]name[ARGS]{...}`` format, not this one).
"""

from __future__ import annotations

import json
import secrets
import string
from collections.abc import Collection
from typing import Callable, Sequence

from ..constrained import Constraint
from ..model import Tokenizer
from .format import ToolCallFormat
from .grammar import chosen_tools, function_rules, json_call_rule, lark_text, tag_literal
from .spec import ToolChoice, ToolSpec
from .stream import CallStream
from .untagged import UntaggedCalls, UntaggedStyle

TOOL_CALLS = "[TOOL_CALLS]"
LATER_FORMAT = "[ARGS]"  # [TOOL_CALLS]name[ARGS]{...}: another format
CALL_SEPARATOR = ", "
ID_LENGTH = 9
_ID_ALPHABET = string.ascii_letters + string.digits
STYLE = UntaggedStyle(prefixes=(TOOL_CALLS,), extra_keys=frozenset({"id"}))


class MistralFormat(ToolCallFormat):
    """Mistral's ``[TOOL_CALLS]`` format (module docstring)."""

    name = "mistral"
    markers = (TOOL_CALLS,)
    tags = (TOOL_CALLS,)

    def recognises(self, template: str) -> bool:
        return LATER_FORMAT not in template and super().recognises(template)

    def format_calls(self, calls: Sequence[tuple[str, str]]) -> str:
        objects = (
            f'{{"name": {json.dumps(name, ensure_ascii=False)}, "arguments": {arguments}}}' for name, arguments in calls
        )
        return f"{TOOL_CALLS}[{CALL_SEPARATOR.join(objects)}]"

    def constraint(
        self,
        tools: Sequence[ToolSpec],
        choice: ToolChoice,
        parallel: bool = True,
        tokenizer: Tokenizer | None = None,
    ) -> Constraint:
        chosen, parallel = chosen_tools(tools, choice, parallel)
        options, rules = function_rules(chosen)
        more = f" ({lark_text(CALL_SEPARATOR)} call)*" if parallel else ""
        lines = [
            f"start: {tag_literal(TOOL_CALLS, tokenizer)} {lark_text('[')} call{more} {lark_text(']')}",
            json_call_rule(options),
            *rules,
        ]
        return Constraint.lark("\n".join(lines) + "\n")

    def stream(self, tool_names: Collection[str] | None = None, new_id: Callable[[], str] | None = None) -> CallStream:
        return CallStream(None, self.untagged(tool_names), new_id or self.new_call_id)

    def untagged(self, tool_names: Collection[str] | None) -> UntaggedCalls:
        return UntaggedCalls(tool_names, STYLE)

    def new_call_id(self) -> str:
        """9 letters or digits, as the template requires of a call's id."""
        return "".join(secrets.choice(_ID_ALPHABET) for _ in range(ID_LENGTH))


MISTRAL = MistralFormat()

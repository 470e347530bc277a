"""The Qwen2.5 / Hermes tool-call format (``HERMES``), as the Qwen2.5 chat template describes it.

The template lists the tools (OpenAI's ``{"type": "function", "function": {...}}`` objects) in the
system prompt and asks for each call as one block::

    <tool_call>
    {"name": <function-name>, "arguments": <args-json-object>}
    </tool_call>

several calls one after another, a newline between blocks (how the template replays an assistant
message with several ``tool_calls``). In Qwen2.5's vocabulary ``<tool_call>`` (151657) and
``</tool_call>`` (151658) are single added tokens (not special: they stay in decoded text).

The grammar::

    start: call ("\\n" call)* "\\n"?           # "required" with parallel calls; one call otherwise
    call: <tool_call> "\\n{\\"name\\": " (fn_0 | fn_1 | ...) "}\\n" </tool_call>

(``fn_i``/``args_i``: ``grammar.function_rules``), the tags named as tokens where the vocabulary has
them (``tags_are_tokens``), else as text. In auto mode, with the request's tool names, a reply of
untagged calls (bare ``{"name": ..., "arguments": {...}}`` objects, or in a ```json fence) is read as
calls too, as llama.cpp's Hermes parser does (``untagged``). The default format: a chat template
that no registered family recognises gets this one.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Callable, Sequence

from ..constrained import Constraint
from ..model import Tokenizer
from .format import ToolCallFormat
from .grammar import chosen_tools, function_rules, is_token, lark_text
from .parse import ParsedReply, read_reply
from .spec import ToolChoice, ToolSpec
from .stream import Blocks, CallStream, new_call_id
from .untagged import UntaggedCalls

TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"
CALL_SEPARATOR = "\n"  # between two blocks of one reply
BLOCKS = Blocks(TOOL_CALL_OPEN, TOOL_CALL_CLOSE)


def format_tool_call(name: str, arguments: str) -> str:
    """One call's block, as the chat template writes it (``arguments``: the JSON object's text)."""
    call = f'{{"name": {json.dumps(name, ensure_ascii=False)}, "arguments": {arguments}}}'
    return f"{TOOL_CALL_OPEN}\n{call}\n{TOOL_CALL_CLOSE}"


def tags_are_tokens(tokenizer: Tokenizer) -> bool:
    """Whether ``<tool_call>`` and ``</tool_call>`` are each one token of ``tokenizer`` (added special
    tokens, which the grammar must name as tokens: text would not match them)."""
    return all(is_token(tag, tokenizer) for tag in (TOOL_CALL_OPEN, TOOL_CALL_CLOSE))


def tool_call_constraint(
    tools: Sequence[ToolSpec], choice: ToolChoice, parallel: bool = True, *, tag_tokens: bool = True
) -> Constraint:
    """The constraint for ``choice``: "required" -> one call of any of ``tools`` (one or more, a newline
    between them and optionally after the last, when ``parallel``); "function" -> exactly one call of
    that function. ``tag_tokens``:
    name the tags as special tokens (``tags_are_tokens`` of the target's tokenizer) or as text."""
    chosen, parallel = chosen_tools(tools, choice, parallel)
    open_tag, close_tag = (
        (TOOL_CALL_OPEN, TOOL_CALL_CLOSE) if tag_tokens else (lark_text(TOOL_CALL_OPEN), lark_text(TOOL_CALL_CLOSE))
    )
    head, tail = lark_text('\n{"name": '), lark_text("}\n")
    options, rules = function_rules(chosen)
    separator = lark_text(CALL_SEPARATOR)
    lines = [
        # a model ends its last block with a newline before its end of turn, as the template writes them
        f"start: call ({separator} call)* {separator}?" if parallel else "start: call",
        f"call: {open_tag} {head} ({options}) {tail} {close_tag}",
        *rules,
    ]
    return Constraint.lark("\n".join(lines) + "\n")


class ToolCallStream(CallStream):
    """The Hermes format's reply reader (``CallStream`` over ``<tool_call>`` blocks); with
    ``tool_names`` (auto mode) a reply of untagged calls of those tools is read as calls too."""

    def __init__(self, new_id: Callable[[], str] = new_call_id, tool_names: Collection[str] | None = None) -> None:
        super().__init__(BLOCKS, None if tool_names is None else UntaggedCalls(tool_names), new_id)


def parse_tool_calls(
    text: str, new_id: Callable[[], str] = new_call_id, tool_names: Collection[str] | None = None
) -> ParsedReply:
    """The content and calls of the Hermes reply ``text`` (``read_reply``); ``new_id`` makes call ids;
    ``tool_names`` (the request's tools) also reads a reply of untagged calls (``ToolCallStream``)."""
    return read_reply(ToolCallStream(new_id, tool_names), text)


class HermesFormat(ToolCallFormat):
    """The Qwen2.5 / Hermes format (module docstring)."""

    name = "hermes"
    markers = (TOOL_CALL_OPEN,)
    tags = (TOOL_CALL_OPEN, TOOL_CALL_CLOSE)

    def format_calls(self, calls: Sequence[tuple[str, str]]) -> str:
        return CALL_SEPARATOR.join(format_tool_call(name, arguments) for name, arguments in calls)

    def constraint(
        self,
        tools: Sequence[ToolSpec],
        choice: ToolChoice,
        parallel: bool = True,
        tokenizer: Tokenizer | None = None,
    ) -> Constraint:
        tag_tokens = tokenizer is not None and self.tags_are_tokens(tokenizer)
        return tool_call_constraint(tools, choice, parallel, tag_tokens=tag_tokens)

    def stream(self, tool_names: Collection[str] | None = None, new_id: Callable[[], str] | None = None) -> CallStream:
        return ToolCallStream(new_id or self.new_call_id, tool_names)

    def untagged(self, tool_names: Collection[str] | None) -> UntaggedCalls | None:
        return UntaggedCalls(tool_names)


HERMES = HermesFormat()

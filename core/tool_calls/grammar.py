"""The grammar of tool calls: what ``tool_choice`` "required" or a named function lets the model write.

A Lark grammar in llguidance's dialect (``specdraft.constrained.Constraint.lark``)::

    start: call ("\\n" call)*            # "required" with parallel calls; one call otherwise
    call: <tool_call> "\\n{\\"name\\": " (fn_0 | fn_1 | ...) "}\\n" </tool_call>
    fn_0: "\\"get_weather\\", \\"arguments\\": " args_0
    args_0: %json {... the tool's parameters schema, in the fixed JSON style ...}

the text ``format_tool_call`` writes and the chat template replays. The tags are named as tokens
(``<tool_call>``) where the vocabulary has them as single special tokens (Qwen2.5: 151657, 151658;
``tags_are_tokens``), else as text. Arguments follow the fixed JSON style of
``specdraft.constrained`` (separators ``", "`` and ``": "``, no newlines: ``JSON_STYLE``), and the keys
come in the order the schema declares them.
"""

from __future__ import annotations

import json
from typing import Sequence

from ..constrained import JSON_STYLE, Constraint
from ..model import Tokenizer
from .spec import ToolChoice, ToolError, ToolSpec

TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"
CALL_SEPARATOR = "\n"  # between two blocks of one reply


def format_tool_call(name: str, arguments: str) -> str:
    """One call's block, as the chat template writes it (``arguments``: the JSON object's text)."""
    return f'{TOOL_CALL_OPEN}\n{{"name": {json.dumps(name, ensure_ascii=False)}, "arguments": {arguments}}}\n{TOOL_CALL_CLOSE}'


def tags_are_tokens(tokenizer: Tokenizer) -> bool:
    """Whether ``<tool_call>`` and ``</tool_call>`` are each one token of ``tokenizer`` (added special
    tokens, which the grammar must name as tokens: text would not match them)."""
    return all(len(tokenizer.encode(tag)) == 1 for tag in (TOOL_CALL_OPEN, TOOL_CALL_CLOSE))


def tool_call_constraint(
    tools: Sequence[ToolSpec], choice: ToolChoice, parallel: bool = True, *, tag_tokens: bool = True
) -> Constraint:
    """The constraint for ``choice``: "required" -> one call of any of ``tools`` (one or more, a newline
    between them and optionally after the last, when ``parallel``); "function" -> exactly one call of
    that function. ``tag_tokens``:
    name the tags as special tokens (``tags_are_tokens`` of the target's tokenizer) or as text."""
    if not choice.constrained:
        raise ValueError(f'tool_call_constraint needs tool_choice "required" or a function, got {choice.mode!r}')
    if choice.mode == "function":
        chosen = [tool for tool in tools if tool.name == choice.name]
        if not chosen:
            raise ToolError(f"tool_choice.function.name {choice.name!r} is not one of the request's tools")
        chosen = chosen[:1]
        parallel = False
    else:
        chosen = list(tools)
        if not chosen:
            raise ToolError('tool_choice is "required" but the request gives no tools')
    open_tag, close_tag = (
        (TOOL_CALL_OPEN, TOOL_CALL_CLOSE) if tag_tokens else (_text(TOOL_CALL_OPEN), _text(TOOL_CALL_CLOSE))
    )
    head, tail = _text('\n{"name": '), _text("}\n")
    options = " | ".join(f"fn_{i}" for i in range(len(chosen)))
    lines = [
        # a model ends its last block with a newline before its end of turn, as the template writes them
        f"start: call ({_text(CALL_SEPARATOR)} call)* {_text(CALL_SEPARATOR)}?" if parallel else "start: call",
        f"call: {open_tag} {head} ({options}) {tail} {close_tag}",
    ]
    for i, tool in enumerate(chosen):
        name = _text(json.dumps(tool.name) + ', "arguments": ')
        lines.append(f"fn_{i}: {name} args_{i}")
        lines.append(f"args_{i}: %json {json.dumps(_styled(tool.arguments_schema()), ensure_ascii=False)}")
    return Constraint.lark("\n".join(lines) + "\n")


def _text(text: str) -> str:
    """A Lark string literal (JSON's escapes are Lark's)."""
    return json.dumps(text, ensure_ascii=False)


def _styled(schema: dict) -> dict:
    """``schema`` with the fixed JSON style as its llguidance options (``x-guidance``)."""
    return {**schema, "x-guidance": {**schema.get("x-guidance", {}), **JSON_STYLE}}

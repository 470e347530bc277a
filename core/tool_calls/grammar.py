"""The pieces every family's call grammar is built from (``ToolCallFormat.constraint``).

A call grammar is a Lark grammar in llguidance's dialect (``specdraft.constrained.Constraint.lark``)
that admits exactly the calls ``tool_choice`` "required" or a named function allows. Each family
writes its own ``start`` and ``call`` rules (its tags and layout, as its chat template replays a call);
the functions' rules are shared::

    fn_0: "\\"get_weather\\", \\"arguments\\": " args_0
    args_0: %json {... the tool's parameters schema, in the fixed JSON style ...}

(the arguments' key is the family's: ``"arguments"``, or Llama 3's ``"parameters"``). Arguments follow
the fixed JSON style of ``specdraft.constrained`` (separators ``", "`` and ``": "``, no newlines:
``JSON_STYLE``), and the keys come in the order the schema declares them. A tag is named as a token
where the vocabulary has it as one token (``tag_literal``), else written as text.
"""

from __future__ import annotations

import json
from typing import Sequence

from ..constrained import JSON_STYLE
from ..model import Tokenizer
from .spec import ToolChoice, ToolError, ToolSpec


def chosen_tools(tools: Sequence[ToolSpec], choice: ToolChoice, parallel: bool) -> tuple[list[ToolSpec], bool]:
    """The tools a constrained reply may call and whether it may make several calls: "required" ->
    all of ``tools`` (``parallel`` as asked); "function" -> that one function, one call. Raises
    ``ValueError`` for a choice that is not constrained, ``ToolError`` for a choice the tools cannot meet."""
    if not choice.constrained:
        raise ValueError(f'a call grammar needs tool_choice "required" or a function, got {choice.mode!r}')
    if choice.mode == "function":
        chosen = [tool for tool in tools if tool.name == choice.name]
        if not chosen:
            raise ToolError(f"tool_choice.function.name {choice.name!r} is not one of the request's tools")
        return chosen[:1], False
    if not tools:
        raise ToolError('tool_choice is "required" but the request gives no tools')
    return list(tools), parallel


def function_rules(chosen: Sequence[ToolSpec], key: str = "arguments") -> tuple[str, list[str]]:
    """``(alternatives, rules)``: ``"fn_0 | fn_1 | ..."`` and the lines defining each ``fn_i`` (the
    name, then ``key`` and the arguments) and ``args_i`` (its ``arguments_schema`` in the fixed style)."""
    rules: list[str] = []
    for i, tool in enumerate(chosen):
        rules.append(f"fn_{i}: {lark_text(json.dumps(tool.name) + f', {json.dumps(key)}: ')} args_{i}")
        rules.append(f"args_{i}: %json {json.dumps(_styled(tool.arguments_schema()), ensure_ascii=False)}")
    return " | ".join(f"fn_{i}" for i in range(len(chosen))), rules


def json_call_rule(options: str) -> str:
    """``call``: one call as a bare JSON object, ``{"name": `` then one of ``options`` then ``}``."""
    head, tail = lark_text('{"name": '), lark_text("}")
    return f"call: {head} ({options}) {tail}"


def lark_text(text: str) -> str:
    """A Lark string literal (JSON's escapes are Lark's)."""
    return json.dumps(text, ensure_ascii=False)


def is_token(tag: str, tokenizer: Tokenizer) -> bool:
    """Whether ``tag`` is one token of ``tokenizer`` (an added or special token)."""
    return len(tokenizer.encode(tag)) == 1


def tag_literal(tag: str, tokenizer: Tokenizer | None) -> str:
    """``tag`` in a grammar: the token by id (``<[id]>``) where ``tokenizer`` has it as one token (text
    would not match a special token), else as text (also when ``tokenizer`` is None)."""
    if tokenizer is not None and is_token(tag, tokenizer):
        return f"<[{tokenizer.encode(tag)[0]}]>"
    return lark_text(tag)


def _styled(schema: dict) -> dict:
    """``schema`` with the fixed JSON style as its llguidance options (``x-guidance``)."""
    return {**schema, "x-guidance": {**schema.get("x-guidance", {}), **JSON_STYLE}}

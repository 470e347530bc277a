"""The Llama 3.x JSON tool-call format (``LLAMA3``), as the Llama 3.1 / 3.2 / 3.3 chat templates
describe it.

With tools the template tells the model to "respond in the format {"name": function name,
"parameters": dictionary of argument name and its value}", and replays an assistant message's call as
that JSON object alone, then ``<|eot_id|>``::

    {"name": "get_weather", "parameters": {"city": "Paris"}}

one call per message (the templates refuse more). Llama 3.1 may open a call with ``<|python_tag|>``
(its built-in tools' ``<|python_tag|>brave_search.call(...)``; some fine-tunes put the JSON call after
it too): a special token, so decoded text usually lacks it; the reader takes the call with or without
it. Built-in tool calls (``name.call(...)``) are not read as calls.

The grammar is the call as the template replays it::

    start: call
    call: "{\\"name\\": " (fn_0 | fn_1 | ...) "}"

with ``"parameters"`` as the arguments' key (``grammar.function_rules``); parallel calls are not
offered (one per reply, as the template replays them). The reply is read as calls when it is nothing
but such objects (``"arguments"`` accepted for ``"parameters"``; several separated by ``;``, as vLLM
reads them; optionally in a ```json fence); anything else is content. Calls are given whole when the
reply ends. Recognised by a template that has Llama 3's headers and its ``ipython`` role or
``<|python_tag|>``.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Callable, Sequence

from ..constrained import Constraint
from ..model import Tokenizer
from .format import ToolCallFormat
from .grammar import chosen_tools, function_rules, json_call_rule
from .spec import ToolChoice, ToolSpec
from .stream import CallStream
from .untagged import UntaggedCalls, UntaggedStyle

PYTHON_TAG = "<|python_tag|>"
ARGUMENTS_KEY = "parameters"
STYLE = UntaggedStyle(prefixes=(PYTHON_TAG,), separators=";")


class Llama3Format(ToolCallFormat):
    """The Llama 3.x JSON format (module docstring)."""

    name = "llama3"
    markers = (PYTHON_TAG, "<|start_header_id|>ipython<|end_header_id|>")
    header = "<|start_header_id|>"  # every Llama 3 template has it
    tags = ()

    def recognises(self, template: str) -> bool:
        return self.header in template and super().recognises(template)

    def format_calls(self, calls: Sequence[tuple[str, str]]) -> str:
        return "; ".join(
            f'{{"name": {json.dumps(name, ensure_ascii=False)}, "{ARGUMENTS_KEY}": {arguments}}}'
            for name, arguments in calls
        )

    def constraint(
        self,
        tools: Sequence[ToolSpec],
        choice: ToolChoice,
        parallel: bool = True,
        tokenizer: Tokenizer | None = None,
    ) -> Constraint:
        chosen, _ = chosen_tools(tools, choice, parallel)  # one call: the template replays no more
        options, rules = function_rules(chosen, ARGUMENTS_KEY)
        lines = ["start: call", json_call_rule(options), *rules]
        return Constraint.lark("\n".join(lines) + "\n")

    def stream(self, tool_names: Collection[str] | None = None, new_id: Callable[[], str] | None = None) -> CallStream:
        return CallStream(None, self.untagged(tool_names), new_id or self.new_call_id)

    def untagged(self, tool_names: Collection[str] | None) -> UntaggedCalls:
        return UntaggedCalls(tool_names, STYLE)


LLAMA3 = Llama3Format()

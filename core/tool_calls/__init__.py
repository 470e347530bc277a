"""Tool calls in the Qwen2.5 / Hermes format, as the Qwen2.5 chat template describes it.

The chat template lists the tools (OpenAI's ``{"type": "function", "function": {...}}`` objects) in
the system prompt and asks for each call as one block::

    <tool_call>
    {"name": <function-name>, "arguments": <args-json-object>}
    </tool_call>

several calls one after another, a newline between blocks (how the template replays an assistant
message with several ``tool_calls``). In Qwen2.5's vocabulary ``<tool_call>`` (151657) and
``</tool_call>`` (151658) are single added tokens.

- ``spec``: ``ToolSpec`` (one validated OpenAI function tool), ``tools_from_openai``, ``ToolChoice``
  (OpenAI's ``tool_choice``), ``ToolError`` (a ValueError whose message says what is wrong and where:
  ``tools[1].function.name ...``).
- ``grammar``: ``tool_call_constraint``: the Lark grammar (a ``specdraft.constrained.Constraint``) that
  admits exactly the calls ``tool_choice`` "required" or a named function allows, the arguments
  constrained by each tool's ``parameters`` schema in the fixed JSON style.
- ``stream``: ``ToolCallStream``: the model's text, pushed piece by piece, as content and tool-call
  deltas (index, id and name once, then argument fragments); never a partial ``<tool_call`` as content.
- ``untagged``: ``UntaggedCalls``: with the request's tool names (auto mode), a reply that is only
  untagged calls (bare ``{"name": ..., "arguments": {...}}`` objects, or in a ```json fence), as small
  models write them, read as calls (``scan``: the header scanner both use).
- ``parse``: ``parse_tool_calls``: a whole reply as content and ``ToolCall`` s (auto mode), the same
  answer the stream gives.
"""

from .grammar import TOOL_CALL_CLOSE, TOOL_CALL_OPEN, format_tool_call, tags_are_tokens, tool_call_constraint
from .parse import ParsedReply, ToolCall, parse_tool_calls
from .spec import NAME_PATTERN, ToolChoice, ToolError, ToolSpec, tools_from_openai
from .stream import ContentDelta, ToolCallDelta, ToolCallStream, new_call_id

__all__ = [
    "ContentDelta",
    "NAME_PATTERN",
    "ParsedReply",
    "TOOL_CALL_CLOSE",
    "TOOL_CALL_OPEN",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallStream",
    "ToolChoice",
    "ToolError",
    "ToolSpec",
    "format_tool_call",
    "new_call_id",
    "parse_tool_calls",
    "tags_are_tokens",
    "tool_call_constraint",
    "tools_from_openai",
]

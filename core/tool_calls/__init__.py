"""Tool calls: OpenAI's ``tools`` and ``tool_choice``, and each model family's way of writing calls.

A family's format is a ``ToolCallFormat`` (``format``): its tags, the grammar a constrained reply
decodes under, the stream parser that reads a reply as content and calls, and the reader of untagged
calls. The formats (one module each):

- ``hermes``: Qwen2.5 / Hermes, ``<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>``
  blocks (``HERMES``, the default; ``ToolCallStream``, ``parse_tool_calls``, ``tool_call_constraint``,
  ``format_tool_call`` and ``tags_are_tokens`` are its functions);
- ``llama3``: Llama 3.x JSON calls, ``{"name": ..., "parameters": {...}}`` (``LLAMA3``);
- ``mistral``: ``[TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]`` (``MISTRAL``).

``choose``: ``format_for_template`` picks the format from a model's chat template (``FORMATS``, the
registry it reads; Hermes when none recognises it), ``format_for_model`` from a loaded model.

The rest is shared by every format:

- ``spec``: ``ToolSpec`` (one validated OpenAI function tool), ``tools_from_openai``, ``ToolChoice``
  (OpenAI's ``tool_choice``), ``ToolError`` (a ValueError whose message says what is wrong and where:
  ``tools[1].function.name ...``).
- ``grammar``: the pieces of a call grammar (the functions' rules, the arguments constrained by each
  tool's ``parameters`` schema in the fixed JSON style; tags named as tokens).
- ``stream``: ``CallStream``: the model's text, pushed piece by piece, as content and tool-call
  deltas (index, id and name once, then argument fragments); never a partial tag as content.
- ``untagged``: ``UntaggedCalls``: a reply that is only untagged calls (bare ``{"name": ...,
  "arguments": {...}}`` objects, or in a ```json fence; ``UntaggedStyle`` for a family's prefixes and
  keys) read as calls (``scan``: the header scanner both use).
- ``parse``: ``read_reply``: a whole reply as content and ``ToolCall`` s, the same answer the stream gives.
"""

from .choose import DEFAULT, FORMATS, format_by_name, format_for_model, format_for_template
from .format import ToolCallFormat
from .hermes import (
    HERMES,
    TOOL_CALL_CLOSE,
    TOOL_CALL_OPEN,
    ToolCallStream,
    format_tool_call,
    parse_tool_calls,
    tags_are_tokens,
    tool_call_constraint,
)
from .llama3 import LLAMA3
from .mistral import MISTRAL
from .parse import ParsedReply, ToolCall, read_reply
from .spec import NAME_PATTERN, ToolChoice, ToolError, ToolSpec, check_parameters, tools_from_openai
from .stream import CallStream, ContentDelta, ToolCallDelta, new_call_id

__all__ = [
    "CallStream",
    "ContentDelta",
    "DEFAULT",
    "FORMATS",
    "HERMES",
    "LLAMA3",
    "MISTRAL",
    "NAME_PATTERN",
    "ParsedReply",
    "TOOL_CALL_CLOSE",
    "TOOL_CALL_OPEN",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallFormat",
    "ToolCallStream",
    "ToolChoice",
    "ToolError",
    "ToolSpec",
    "format_by_name",
    "format_for_model",
    "format_for_template",
    "format_tool_call",
    "new_call_id",
    "parse_tool_calls",
    "read_reply",
    "tags_are_tokens",
    "tool_call_constraint",
    "tools_from_openai",
    "check_parameters",
]

"""parse_tool_calls: a whole reply as its content and tool calls (tool_choice "auto", or a reply
constrained by ``tool_call_constraint``).

The same reading as ``ToolCallStream`` (it is the stream, fed the whole text at once), so a streamed
reply and the same reply unstreamed always agree: the blocks that are calls, each call's arguments as
the model wrote them, and the content (the text outside the calls, stripped; None when empty).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Callable

from .stream import ContentDelta, ToolCallDelta, ToolCallStream, new_call_id


@dataclass(frozen=True)
class ToolCall:
    """One call: ``id`` (``call_`` and 24 hex digits), the function's ``name`` and its ``arguments``
    as JSON text (as OpenAI gives them)."""

    id: str
    name: str
    arguments: str

    def to_openai(self) -> dict[str, Any]:
        """The call as an assistant message's ``tool_calls[]`` entry."""
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@dataclass(frozen=True)
class ParsedReply:
    """A reply's ``content`` (None when there is none) and its ``calls`` in order."""

    content: str | None
    calls: list[ToolCall] = field(default_factory=list)


def parse_tool_calls(
    text: str, new_id: Callable[[], str] = new_call_id, tool_names: Collection[str] | None = None
) -> ParsedReply:
    """The content and calls of the reply ``text`` (module docstring); ``new_id`` makes call ids;
    ``tool_names`` (the request's tools) also reads a reply of untagged calls (``ToolCallStream``)."""
    stream = ToolCallStream(new_id, tool_names)
    content: list[str] = []
    calls: list[list[str]] = []  # [id, name, arguments] by index
    for event in [*stream.push(text), *stream.finish()]:
        if isinstance(event, ContentDelta):
            content.append(event.text)
        elif isinstance(event, ToolCallDelta):
            if event.id is not None:
                calls.append([event.id, event.name or "", ""])
            calls[event.index][2] += event.arguments
    return ParsedReply("".join(content) or None, [ToolCall(*call) for call in calls])

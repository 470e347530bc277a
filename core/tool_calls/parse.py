"""read_reply: a whole reply as its content and tool calls (tool_choice "auto", or a reply constrained
by a format's grammar).

The same reading as the format's ``CallStream`` (it is the stream, fed the whole text at once), so a
streamed reply and the same reply unstreamed always agree: the blocks that are calls, each call's
arguments as the model wrote them, and the content (the text outside the calls, stripped; None when
empty). ``ToolCallFormat.parse`` (and the Hermes format's ``parse_tool_calls``) call it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .stream import CallStream, ContentDelta, ToolCallDelta


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


def read_reply(stream: CallStream, text: str) -> ParsedReply:
    """The content and calls of the reply ``text``, read by a fresh ``stream`` (module docstring)."""
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

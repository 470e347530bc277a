"""CallStream: a model's reply, pushed piece by piece, as content and tool-call deltas.

The reply is content with tool-call blocks in it (``Blocks``: the Hermes format's ``<tool_call>`` ...
``</tool_call>``; a family whose calls are the whole reply has none), and, with an ``UntaggedCalls``
reader, may be nothing but untagged calls. The stream emits events as soon as it knows what the text is:

- ``ContentDelta(text)``: content. Text that could still begin a tag (a suffix such as ``<tool_c``)
  is held back until it is known not to; content is stripped as ``str.strip`` strips the whole
  (leading whitespace dropped, trailing whitespace held until more content follows).
- ``ToolCallDelta(index, id, name, "")`` once per call, when its header ``{"name": "...",
  "arguments": {`` has been read, then ``ToolCallDelta(index, None, None, fragment)`` with the
  arguments' text as it comes (the fragments join into the arguments' JSON text, as the model wrote it).

A block is a call when it reads the open tag, the header, a balanced JSON object (the arguments),
then ``}`` and the close tag (whitespace allowed between the parts). Once the header is read the
call stands: a reply cut short inside the arguments ends with that call's arguments unfinished (as
OpenAI's do when ``finish_reason`` is "length"), and text after the arguments' object that is not the
block's end is content; a reply cut short inside a header (a block that so far reads as the start of a
call) ends without it. A block whose header does not match is read whole up to the close tag: a
JSON object with a string ``name`` and an object ``arguments`` (in any order, any whitespace) is a call
(its arguments re-serialised), anything else stays content, tags included, as does such a block never
closed.

With an ``UntaggedCalls`` reader (``untagged``: bare ``{"name": ..., "arguments": {...}}`` objects, or
in a ```json fence) a reply that is nothing but such calls is also calls: while the reply so far could
still be that, it is held back; once it cannot, it is read as above; at the reply's end, if it is, each
call is given whole (id and name, then its arguments, re-serialised, in one fragment).
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Any, Callable, Union

from .scan import NEED_MORE, NO_MATCH, JsonBrackets, scan_parts
from .untagged import UntaggedCalls

_WHITESPACE = " \t\r\n"


@dataclass(frozen=True)
class Blocks:
    """Tool-call blocks inside content: ``open`` tag, a JSON header ``{"name": <name>, "<key>": {``,
    the arguments' object, ``}`` and the ``close`` tag; ``key`` the arguments' key."""

    open: str
    close: str
    key: str = "arguments"

    @property
    def header(self) -> tuple[str | None, ...]:
        """The header's parts for ``scan_parts`` (None: the name, a JSON string)."""
        return ("{", '"name"', ":", None, ",", f'"{self.key}"', ":", "{")

    @property
    def tail(self) -> tuple[str, ...]:
        return ("}", self.close)


def new_call_id() -> str:
    """A fresh tool-call id as OpenAI writes them: ``call_`` and 24 hex digits."""
    return "call_" + secrets.token_hex(12)


@dataclass(frozen=True)
class ContentDelta:
    text: str


@dataclass(frozen=True)
class ToolCallDelta:
    """Call ``index`` (0, 1, ... in the reply): ``id`` and ``name`` on its first delta only (None after),
    ``arguments`` the next fragment of its arguments' text ("" on the first)."""

    index: int
    id: str | None
    name: str | None
    arguments: str

    def to_openai(self) -> dict[str, Any]:
        """The delta as a chat-completion chunk's ``delta.tool_calls[]`` entry."""
        if self.id is None:
            return {"index": self.index, "function": {"arguments": self.arguments}}
        return {
            "index": self.index,
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


Event = Union[ContentDelta, ToolCallDelta]


class CallStream:
    """One reply's parser (module docstring). ``push`` each new piece of text, then ``finish`` once;
    each returns the events the text decided (consecutive content and argument fragments merged).
    ``blocks``: the tagged blocks in content (None: none); ``untagged``: the reader of a reply that is
    only untagged calls (None: no such reading); ``new_id`` makes call ids."""

    def __init__(
        self, blocks: Blocks | None, untagged: UntaggedCalls | None = None, new_id: Callable[[], str] = new_call_id
    ) -> None:
        self._blocks = blocks
        self._new_id = new_id
        self._untagged = untagged
        # untagged | content | header | opaque | arguments | tail
        self._mode = "content" if untagged is None else "untagged"
        self._buffer = ""  # text not yet decided
        self._calls = 0
        self._brackets = JsonBrackets()  # the arguments' nesting
        self._content_started = False
        self._held_whitespace = ""
        self._events: list[Event] = []
        self._finished = False

    @property
    def calls(self) -> int:
        """How many calls the stream has begun."""
        return self._calls

    def push(self, text: str) -> list[Event]:
        if self._finished:
            raise RuntimeError("push after finish")
        self._buffer += text
        if self._untagged is not None and self._mode == "untagged" and self._untagged.feed(text) is NO_MATCH:
            self._mode = "content"
        while self._mode != "untagged" and self._step():
            pass
        return self._take()

    def finish(self) -> list[Event]:
        """The end of the reply: text held back is decided (module docstring)."""
        if not self._finished:
            self._finished = True
            if self._mode == "untagged":
                self._end_untagged()
            if self._mode == "content":
                self._content(self._buffer)
            elif self._mode == "opaque":  # a malformed block never closed stays content
                assert self._blocks is not None  # blocks are read only with tags
                self._content(self._blocks.open + self._buffer)
            # header: a call cut short before its arguments; arguments, tail: the call stands
            self._buffer = ""
        return self._take()

    # --- one step of the state machine: True when it changed state and may go on ------------------
    def _step(self) -> bool:
        mode, buffer, blocks = self._mode, self._buffer, self._blocks
        if blocks is None:  # no tagged blocks: all of it is content
            self._content(buffer)
            self._buffer = ""
            return False
        if mode == "content":
            start = buffer.find(blocks.open)
            if start < 0:
                keep = _partial_suffix(buffer, blocks.open)
                self._content(buffer[: len(buffer) - keep])
                self._buffer = buffer[len(buffer) - keep :]
                return False
            self._content(buffer[:start])
            self._buffer, self._mode = buffer[start + len(blocks.open) :], "header"
            return True
        if mode == "header":
            found = scan_parts(buffer, blocks.header)
            if isinstance(found, bool):  # NEED_MORE: wait; NO_MATCH: not a call's header
                if found is NEED_MORE:
                    return False
                self._mode = "opaque"
                return True
            name, end = found
            self._emit(ToolCallDelta(self._calls, self._new_id(), name, ""))
            self._emit(ToolCallDelta(self._calls, None, None, "{"))
            self._calls += 1
            self._buffer, self._mode = buffer[end:], "arguments"
            self._brackets = JsonBrackets(1)  # the arguments' "{" is read
            return True
        if mode == "arguments":
            end = self._scan_arguments(buffer)
            self._emit(ToolCallDelta(self._calls - 1, None, None, buffer[:end]))
            self._buffer = buffer[end:]
            if self._brackets.depth == 0:
                self._mode = "tail"
                return True
            return False
        if mode == "tail":
            found = scan_parts(buffer, blocks.tail)
            if found is NEED_MORE:
                return False
            if not isinstance(found, bool):  # the block's end: dropped
                self._buffer = buffer[found[1] :]
            self._mode = "content"
            return True
        # opaque: wait for the block's end, then decide it whole
        end = buffer.find(blocks.close)
        if end < 0:
            return False
        call = _loose_call(buffer[:end], blocks.key)
        if call is None:
            self._content(blocks.open + buffer[: end + len(blocks.close)])
        else:
            self._emit(ToolCallDelta(self._calls, self._new_id(), call[0], ""))
            self._emit(ToolCallDelta(self._calls, None, None, call[1]))
            self._calls += 1
        self._buffer, self._mode = buffer[end + len(blocks.close) :], "content"
        return True

    def _end_untagged(self) -> None:
        """The reply's end while it could be untagged calls: the calls, or the text read as usual."""
        assert self._untagged is not None  # the mode is "untagged" only with tool names
        calls = self._untagged.end()
        if calls is None:
            self._mode = "content"
            while self._step():
                pass
            return
        for name, arguments in calls:
            self._emit(ToolCallDelta(self._calls, self._new_id(), name, ""))
            self._emit(ToolCallDelta(self._calls, None, None, arguments))
            self._calls += 1
        self._buffer = ""

    def _scan_arguments(self, text: str) -> int:
        """How much of ``text`` belongs to the arguments' object (all of it, or up to its closing brace)."""
        end = self._brackets.close(text)
        return len(text) if end is None else end

    # --- events ---------------------------------------------------------------------------------
    def _content(self, text: str) -> None:
        if not self._content_started:
            text = text.lstrip(_WHITESPACE)
            if not text:
                return
            self._content_started = True
        text = self._held_whitespace + text
        kept = text.rstrip(_WHITESPACE)
        self._held_whitespace = text[len(kept) :]
        if kept:
            self._emit(ContentDelta(kept))

    def _emit(self, event: Event) -> None:
        last = self._events[-1] if self._events else None
        if isinstance(event, ContentDelta) and isinstance(last, ContentDelta):
            self._events[-1] = ContentDelta(last.text + event.text)
        elif (
            isinstance(event, ToolCallDelta)
            and event.id is None
            and isinstance(last, ToolCallDelta)
            and last.id is None
            and last.index == event.index
        ):
            self._events[-1] = ToolCallDelta(event.index, None, None, last.arguments + event.arguments)
        elif not (isinstance(event, ToolCallDelta) and event.id is None and not event.arguments):
            self._events.append(event)

    def _take(self) -> list[Event]:
        events, self._events = self._events, []
        return events


def _loose_call(body: str, key: str) -> tuple[str, str] | None:
    """A block's body as ``(name, arguments' JSON text)`` when it is a JSON object with a string
    ``name`` and an object ``key`` (its arguments), in any order and layout; else None."""
    try:
        value = json.loads(body)
    except ValueError:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("name"), str) or not isinstance(value.get(key), dict):
        return None
    return value["name"], json.dumps(value[key], ensure_ascii=False)


def _partial_suffix(text: str, tag: str) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of ``tag``."""
    for size in range(min(len(text), len(tag) - 1), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0

"""How each completion endpoint spells its answer (docs/service.md): ``Answer`` writes the envelope
(OpenAI's completion and chunk objects) for the service and the laptop's edge endpoint alike;
``Format`` (``TEXT``, ``CHAT``) spells a choice, whole or as streamed deltas.

A chat choice is OpenAI's assistant message, with ``tool_calls`` when the request's ``OutputPlan``
reads calls: the model's tool-call format (``OutputPlan.tool_format``) parses the text, whole
(``parse``) or as it streams (``stream``, the same parse fed in pieces: each call's id and name once,
then argument fragments, never a partial tag as content). In auto mode a reply of only untagged calls
of the request's tools is read as calls too; ``parallel_tool_calls: false`` keeps the first call.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from specdraft.tool_calls import ContentDelta

from .protocol.responses import ChatChunk, ChatCompletion, Completion, Reply, TextChunk, answer
from .structured_output import OutputPlan

ASSISTANT = "assistant"


class Deltas:
    """One streamed choice's reader: ``push`` each piece of text, ``finish`` once; both return the
    deltas to send (each the body of one chunk's choice, without index and finish_reason). This one
    is the text endpoint's (each piece as it comes); the chat endpoint's reads tool calls too."""

    calls: int = 0  # tool calls the answer made so far

    def push(self, text: str) -> list[dict[str, Any]]:
        return [{"text": text}]

    def finish(self) -> list[dict[str, Any]]:
        return []

    def final(self) -> dict[str, Any]:
        """The body of the choice's last chunk (the one with ``finish_reason``)."""
        return {"text": ""}


class Format:
    """How one endpoint spells its answer; everything else is shared (``completions``). This one is
    the text endpoint's (``TEXT``); the chat endpoint's (``CHAT``) overrides it."""

    chat = False
    object = chunk_object = "text_completion"  # of a whole response, of a streamed chunk
    whole_model: type[Reply] = Completion  # a whole response's model
    chunk_model: type[Reply] = TextChunk  # a streamed chunk's
    id_prefix = "cmpl-"
    prompt_param = "prompt"  # the request field holding the prompt

    def choice(self, text: str, plan: OutputPlan) -> tuple[dict[str, Any], int]:
        """The generated ``text`` as a non-streamed choice's fields, and the number of tool calls made."""
        return {"text": text}, 0

    def deltas(self, plan: OutputPlan) -> Deltas:
        return Deltas()


def _untagged_names(plan: OutputPlan) -> list[str] | None:
    """In auto mode, the tools' names: a reply of bare JSON calls of them (no ``<tool_call>`` tags,
    as small models often write them) is read as calls too; otherwise None (the format's own calls
    only: tagged blocks, or a family's untagged calls of any name, the grammar having chosen them)."""
    return [tool.name for tool in plan.tools] if plan.choice.mode == "auto" else None


class _ChatDeltas(Deltas):
    """Content as it comes, or, when the plan reads calls, what the format's stream decides."""

    def __init__(self, plan: OutputPlan) -> None:
        self._parser = plan.tool_format.stream(_untagged_names(plan)) if plan.reads_calls else None
        self._max_calls = None if plan.parallel else 1
        self._started = False  # the role has been sent

    def push(self, text: str) -> list[dict[str, Any]]:
        if self._parser is None:
            return self._deltas([{"content": text}] if text else [])
        return self._read(self._parser.push(text))

    def finish(self) -> list[dict[str, Any]]:
        return [] if self._parser is None else self._read(self._parser.finish())

    def final(self) -> dict[str, Any]:
        return self._deltas([{}])[0]

    def _read(self, events: list) -> list[dict[str, Any]]:
        deltas: list[dict[str, Any]] = []
        for event in events:
            if isinstance(event, ContentDelta):
                deltas.append({"content": event.text})
                continue
            if self._max_calls is not None and event.index >= self._max_calls:
                continue
            self.calls = max(self.calls, event.index + 1)
            entry = event.to_openai()
            if deltas and "tool_calls" in deltas[-1]:
                last = deltas[-1]["tool_calls"][-1]
                if last["index"] == entry["index"]:  # one entry per call per chunk, as OpenAI sends them
                    last["function"]["arguments"] += entry["function"]["arguments"]
                else:
                    deltas[-1]["tool_calls"].append(entry)
            else:
                deltas.append({"tool_calls": [entry]})
        return self._deltas(deltas)

    def _deltas(self, deltas: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``deltas`` as chunk bodies: ``{"delta": ...}``, the first of the choice with the role."""
        if deltas and not self._started:
            deltas[0] = {"role": ASSISTANT, **deltas[0]}
            self._started = True
        return [{"delta": delta} for delta in deltas]


class _ChatFormat(Format):
    chat = True
    object = "chat.completion"
    chunk_object = "chat.completion.chunk"
    whole_model, chunk_model = ChatCompletion, ChatChunk
    id_prefix = "chatcmpl-"
    prompt_param = "messages"

    def choice(self, text: str, plan: OutputPlan) -> tuple[dict[str, Any], int]:
        message: dict[str, Any] = {"role": ASSISTANT, "content": text, "refusal": None}
        if not plan.reads_calls:
            return {"message": message}, 0
        reply = plan.tool_format.parse(text, _untagged_names(plan))
        calls = reply.calls if plan.parallel else reply.calls[:1]
        message["content"] = reply.content if calls or reply.content is not None else ""
        if calls:
            message["tool_calls"] = [call.to_openai() for call in calls]
        return {"message": message}, len(calls)

    def deltas(self, plan: OutputPlan) -> Deltas:
        return _ChatDeltas(plan)


TEXT, CHAT = Format(), _ChatFormat()


@dataclass(frozen=True)
class Answer:
    """One answer's envelope, as ``fmt`` spells it: its ``id`` (the format's prefix and a random
    hex), ``created`` (Unix time) and ``model``; each body carries ``extra`` fields after OpenAI's."""

    fmt: Format
    model: str
    id: str = field(default_factory=lambda: uuid.uuid4().hex)  # after the format's prefix
    created: int = field(default_factory=lambda: int(time.time()))

    def head(self, chunk: bool) -> dict[str, Any]:
        """The fields every body (a ``protocol.responses`` model) starts with (``object``: a chunk's
        or the whole answer's)."""
        return {
            "id": f"{self.fmt.id_prefix}{self.id}",
            "object": self.fmt.chunk_object if chunk else self.fmt.object,
            "created": self.created,
            "model": self.model,
        }

    def whole(self, choices: list[dict[str, Any]], usage: dict[str, Any], **extra: Any) -> dict[str, Any]:
        return answer(self.fmt.whole_model, **self.head(False), choices=choices, usage=usage, **extra)

    def choice(
        self, index: int, text: str, plan: OutputPlan, reason: str, logprobs: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """A whole answer's choice: ``text`` spelled under ``plan`` (tool calls read from it)."""
        fields, calls = self.fmt.choice(text, plan)
        return {"index": index, **fields, "logprobs": logprobs, "finish_reason": plan.finish_reason(reason, calls)}

    def chunk(
        self,
        index: int,
        body: dict[str, Any],
        reason: str | None = None,
        logprobs: dict[str, Any] | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """A streamed chunk of choice ``index``: ``body`` is a delta (``Deltas``), ``reason`` the finish reason."""
        choice = {"index": index, **body, "logprobs": logprobs, "finish_reason": reason}
        return answer(self.fmt.chunk_model, **self.head(True), choices=[choice], **extra)

    def usage_chunk(self, usage: dict[str, Any]) -> dict[str, Any]:
        """OpenAI's last chunk with ``stream_options.include_usage``: no choices, only ``usage``."""
        return answer(self.fmt.chunk_model, **self.head(True), choices=[], usage=usage)

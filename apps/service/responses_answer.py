"""A Responses API answer written from the chat answer of the same request (docs/responses-api.md):
``ResponseWriter.whole`` (the chat completion object as a response object) and ``events`` (the chat
chunks as the Responses API's events, the last holding what ``whole`` answers); ``assistant_message``:
an answer's output as the chat message a stored conversation keeps.
"""

from __future__ import annotations

import time
import typing
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

from .protocol import openai_responses as api
from .protocol.openai_responses_request import ResponsesBody
from .protocol.responses import answer


def _id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def usage(chat: dict[str, Any]) -> dict[str, Any]:
    """A chat answer's ``usage`` in the Responses API's names."""
    cached = chat.get("prompt_tokens_details", {}).get("cached_tokens", 0)
    return {
        "input_tokens": chat["prompt_tokens"],
        "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
        "output_tokens": chat["completion_tokens"],
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": chat["total_tokens"],
    }


def _part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": []}


def _message(item_id: str, text: str | None, status: str) -> dict[str, Any]:
    content = [] if text is None else [_part(text)]
    return {"id": item_id, "type": "message", "role": "assistant", "status": status, "content": content}


def _call(item_id: str, call_id: str, name: str, arguments: str, status: str) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "function_call",
        "status": status,
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
    }


def assistant_message(output: list[dict[str, Any]]) -> dict[str, Any]:
    """An answer's ``output`` items as the chat message they came from (text, then tool calls)."""
    texts = [part["text"] for item in output if item["type"] == "message" for part in item["content"]]
    calls = [
        {"id": item["call_id"], "type": "function", "function": {"name": item["name"], "arguments": item["arguments"]}}
        for item in output
        if item["type"] == "function_call"
    ]
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts or not calls else None}
    return {**message, "tool_calls": calls} if calls else message


@dataclass
class ResponseWriter:
    """One response's writer: ``body`` is the request (echoed as OpenAI echoes it), ``model`` the
    served model's name."""

    body: ResponsesBody
    model: str
    id: str = field(default_factory=lambda: _id("resp"))
    created_at: int = field(default_factory=lambda: int(time.time()))

    def response(self, status: str, output: list[dict[str, Any]], chat: dict[str, Any] | None = None) -> dict[str, Any]:
        """The response object with ``output``; ``chat``: the chat answer (or its last chunk) whose
        usage and stats it reports (None: not yet known)."""
        body, sampling = self.body, self.body.sampling_params()
        text_format = body.text.format if body.text is not None else None
        fields: dict[str, Any] = {
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "model": self.model,
            "output": output,
            "parallel_tool_calls": body.parallel_tool_calls is not False,
            "tool_choice": body.tool_choice.model_dump()
            if body.tool_choice is not None and not isinstance(body.tool_choice, str)
            else body.tool_choice or ("auto" if body.tools else "none"),
            "tools": [tool.model_dump() for tool in body.tools or ()],
            "error": None,
            "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
            "instructions": body.instructions,
            "max_output_tokens": body.max_output_tokens,
            "previous_response_id": body.previous_response_id,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "text": {
                "format": {"type": "text"}
                if text_format is None
                else text_format.model_dump(by_alias=True, exclude_none=True)
            },
            "store": body.stored,
            "metadata": {},
            "usage": None if chat is None else usage(chat["usage"]),
        }
        if chat is not None:
            fields.update({k: chat[k] for k in ("speculation", "spec_decode_metrics") if k in chat})
        return answer(api.ResponseObject, **fields)

    def whole(self, chat: dict[str, Any]) -> dict[str, Any]:
        """The chat completion object ``chat`` as a response (module docstring)."""
        choice = chat["choices"][0]
        message, status = choice["message"], _status(choice["finish_reason"])
        calls, text = message.get("tool_calls") or [], message.get("content")
        output = [_message(_id("msg"), text or "", status)] if text or not calls else []
        output += [
            _call(_id("fc"), call["id"], call["function"]["name"], call["function"]["arguments"], status)
            for call in calls
        ]
        return self.response(status, output, chat)

    def events(self, chunks: Iterable[dict[str, Any]], done: Callable[[dict[str, Any]], None]) -> Iterator[dict]:
        """The chat ``chunks`` as the Responses API's events (module docstring); ``done`` gets the
        finished response before its last event is sent."""
        stream = _EventStream()
        yield stream.event("response.created", response=self.response("in_progress", []))
        yield stream.event("response.in_progress", response=self.response("in_progress", []))
        for chunk in chunks:
            for choice in chunk["choices"]:
                delta = choice["delta"]
                if delta.get("content"):
                    yield from stream.text(delta["content"], chunk.get("source"))
                for call in delta.get("tool_calls") or ():
                    yield from stream.call(call)
                if choice["finish_reason"] is not None:
                    status = _status(choice["finish_reason"])
                    yield from stream.close(status, empty=not stream.output)
                    response = self.response(status, stream.output, chunk)
                    done(response)
                    # response.completed, or response.incomplete when the token or time limit cut it
                    yield stream.event(f"response.{status}", response=response)


_EVENT_MODELS = {
    kind: model
    for model in typing.get_args(api.StreamEvent.model_fields["root"].annotation)
    if model is not api.Error
    for kind in typing.get_args(model.model_fields["type"].annotation)
}


def _status(finish_reason: str) -> str:
    return "incomplete" if finish_reason == "length" else "completed"


class _EventStream:
    """The items of a streamed answer as they are written, and the events that say so."""

    def __init__(self) -> None:
        self.sequence = 0
        self.output: list[dict[str, Any]] = []  # the finished items
        self.item: dict[str, Any] | None = None  # the item being written
        self.text_so_far = ""

    def event(self, kind: str, **fields: Any) -> dict[str, Any]:
        """The next event, of type ``kind`` (its model: the event model whose ``type`` names it)."""
        self.sequence += 1
        return answer(_EVENT_MODELS[kind], type=kind, sequence_number=self.sequence - 1, **fields)

    def _where(self) -> dict[str, Any]:
        assert self.item is not None
        return {"item_id": self.item["id"], "output_index": len(self.output)}

    def text(self, text: str, source: str | None) -> Iterator[dict[str, Any]]:
        if self.item is None or self.item["type"] != "message":
            yield from self.close("completed")
            yield from self._open(_message(_id("msg"), None, "in_progress"))
            yield self.event("response.content_part.added", **self._where(), content_index=0, part=_part(""))
        if not text:
            return
        self.text_so_far += text
        fields = {"delta": text, "logprobs": [], **({} if source is None else {"source": source})}
        yield self.event("response.output_text.delta", **self._where(), content_index=0, **fields)

    def call(self, delta: dict[str, Any]) -> Iterator[dict[str, Any]]:
        arguments = delta.get("function", {}).get("arguments") or ""
        if delta.get("id") is not None:
            yield from self.close("completed")
            yield from self._open(_call(_id("fc"), delta["id"], delta["function"]["name"], "", "in_progress"))
        assert self.item is not None and self.item["type"] == "function_call"
        if arguments:
            self.item["arguments"] += arguments
            yield self.event("response.function_call_arguments.delta", **self._where(), delta=arguments)

    def _open(self, item: dict[str, Any]) -> Iterator[dict[str, Any]]:
        self.item, self.text_so_far = item, ""
        yield self.event("response.output_item.added", output_index=len(self.output), item=item)

    def close(self, status: str, empty: bool = False) -> Iterator[dict[str, Any]]:
        """Finish the item being written (``empty``: an answer with no item gets an empty message)."""
        if self.item is None and empty:
            yield from self.text("", None)
        if self.item is None:
            return
        item, where = self.item, self._where()
        if item["type"] == "message":
            part = _part(self.text_so_far)
            yield self.event("response.output_text.done", **where, content_index=0, text=part["text"], logprobs=[])
            yield self.event("response.content_part.done", **where, content_index=0, part=part)
            item = {**item, "content": [part]}
        else:
            arguments = {"name": item["name"], "arguments": item["arguments"]}
            yield self.event("response.function_call_arguments.done", **where, **arguments)
        item = {**item, "status": status}
        yield self.event("response.output_item.done", output_index=len(self.output), item=item)
        self.output.append(item)
        self.item = None

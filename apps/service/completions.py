"""OpenAI-compatible completions: ``POST /v1/completions`` and ``POST /v1/chat/completions``.

Both endpoints run one code path, ``_complete``: validate the body, encode the prompt (the chat
endpoint through the model's chat template), check it fits the context, build a fresh drafter and
generation stream, then answer with one JSON object or, with ``"stream": true``, a
``text/event-stream`` of ``data: {chunk}`` events ending with ``data: [DONE]``. A ``_Format`` holds
the only differences: how a choice and a streamed delta are spelled.

Extensions to OpenAI's API: the request field ``drafter`` ("none", "prompt-lookup", "model:NAME")
and ``top_k``; a ``speculation`` object in the response (the drafter's name and ``Stats.to_dict()``);
a ``source`` ("draft" or "target") on every streamed chunk that carries text, saying whether the
target accepted the text from the drafter or generated it itself.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any, Iterator

from flask import Blueprint, Response, current_app, jsonify, request
from jinja2 import TemplateError

from specdraft import GenerationResult, GenerationStream, Model, SpeculativeGenerator
from specdraft.copydraft import CopyDrafter
from specdraft.copydraft.editor import COPY_SPECULATION

from .errors import INTERNAL_ERROR_MESSAGE, SERVER_ERROR, error_body
from .sse import DONE_EVENT, event
from .state import current_state
from .validation import (
    CompletionRequest,
    RequestError,
    check_context_length,
    parse_completion_request,
    parse_json_body,
)

bp = Blueprint("completions", __name__, url_prefix="/v1")



class _Format:
    """How one endpoint spells its answer; everything else is shared."""

    chat: bool
    object: str  # of a whole response
    chunk_object: str  # of a streamed chunk
    id_prefix: str
    prompt_param: str  # the request field holding the prompt

    def message(self, text: str) -> dict[str, Any]:
        """The generated text inside a non-streamed choice."""
        raise NotImplementedError

    def delta(self, text: str, first: bool) -> dict[str, Any]:
        """A piece of text inside a streamed choice (``first``: the stream's first chunk)."""
        raise NotImplementedError


class _TextFormat(_Format):
    chat = False
    object = chunk_object = "text_completion"
    id_prefix = "cmpl-"
    prompt_param = "prompt"

    def message(self, text: str) -> dict[str, Any]:
        return {"text": text}

    def delta(self, text: str, first: bool) -> dict[str, Any]:
        return {"text": text}


class _ChatFormat(_Format):
    chat = True
    object = "chat.completion"
    chunk_object = "chat.completion.chunk"
    id_prefix = "chatcmpl-"
    prompt_param = "messages"

    def message(self, text: str) -> dict[str, Any]:
        return {"message": {"role": "assistant", "content": text}}

    def delta(self, text: str, first: bool) -> dict[str, Any]:
        delta: dict[str, str] = {"role": "assistant"} if first else {}
        if text:
            delta["content"] = text
        return {"delta": delta}


TEXT, CHAT = _TextFormat(), _ChatFormat()


@bp.post("/completions")
def completions() -> Response:
    """Text completion: ``prompt`` (a string) in, ``choices[0].text`` out."""
    return _complete(TEXT)


@bp.post("/chat/completions")
def chat_completions() -> Response:
    """Chat completion: ``messages`` in (through the model's chat template), ``choices[0].message`` out."""
    return _complete(CHAT)


def _complete(fmt: _Format) -> Response:
    """The shared path: everything that can be rejected is checked before generation starts."""
    state = current_state()
    req = parse_completion_request(parse_json_body(request.get_data()), fmt.chat, state.config)
    model = state.target()
    prompt_ids = _prompt_ids(model, req, state.config.model)
    check_context_length(len(prompt_ids), req.max_tokens, model.max_length, fmt.prompt_param)
    if req.prediction is not None:  # predicted output: draft from it (the request's drafter is not used)
        prediction_ids = model.tokenizer.encode(req.prediction)
        drafter, speculation, drafter_name = CopyDrafter(prediction_ids, model.eos_token_ids), COPY_SPECULATION, "prediction"
    else:
        prediction_ids = None
        drafter = state.drafter(req.drafter, req.generation.sampling, req.generation.seed)
        speculation, drafter_name = state.config.speculation, str(req.drafter)
    stream = SpeculativeGenerator(model, speculation).stream(prompt_ids, drafter, req.generation)
    reply = _Reply(fmt, f"{fmt.id_prefix}{uuid.uuid4().hex}", int(time.time()), state.config.model, drafter_name, prediction_ids)
    if req.stream:
        events = reply.events(stream, current_app.logger)
        return Response(events, mimetype="text/event-stream", headers={"Cache-Control": "no-cache"})
    return jsonify(reply.response(stream.consume()))


def _prompt_ids(model: Model, req: CompletionRequest, served: str) -> list[int]:
    if req.messages is None:
        assert req.prompt is not None
        return model.encode(req.prompt)
    if not model.has_chat_template:
        raise RequestError(f"model {served!r} has no chat template; send a prompt to /v1/completions", "messages")
    try:
        return model.encode_chat([m.to_dict() for m in req.messages])
    except TemplateError as error:  # templates may reject e.g. a system message that is not first
        raise RequestError(f"the model's chat template rejected the messages: {error}", "messages") from None


@dataclass(frozen=True)
class _Reply:
    """Builds one request's response objects: the whole answer, or its stream of chunks."""

    fmt: _Format
    id: str
    created: int
    model: str
    drafter: str
    prediction_ids: list[int] | None = None

    def response(self, result: GenerationResult) -> dict[str, Any]:
        choice = {"index": 0, **self.fmt.message(result.text), "finish_reason": result.finish_reason}
        return {**self._head(self.fmt.object), "choices": [choice], **self._accounting(result)}

    def events(self, stream: GenerationStream, logger: logging.Logger) -> Iterator[str]:
        """Server-sent events: one chunk per text piece, a final chunk with ``finish_reason``,
        ``usage`` and ``speculation``, then ``[DONE]``. An error after the response has started
        ends the stream with an ``{"error": ...}`` event and no ``[DONE]``."""
        first = True
        try:
            for piece in stream:
                yield event({**self._chunk(self.fmt.delta(piece.text, first), None), "source": piece.source})
                first = False
            result = stream.result
            assert result is not None
            yield event({**self._chunk(self.fmt.delta("", first), result.finish_reason), **self._accounting(result)})
        except Exception:
            logger.exception("generation failed while streaming %s", self.id)
            yield event(error_body(INTERNAL_ERROR_MESSAGE, SERVER_ERROR))
            return
        yield DONE_EVENT

    def _head(self, object_: str) -> dict[str, Any]:
        return {"id": self.id, "object": object_, "created": self.created, "model": self.model}

    def _chunk(self, content: dict[str, Any], finish_reason: str | None) -> dict[str, Any]:
        choice = {"index": 0, **content, "finish_reason": finish_reason}
        return {**self._head(self.fmt.chunk_object), "choices": [choice]}

    def _accounting(self, result: GenerationResult) -> dict[str, Any]:
        prompt, completion = len(result.prompt_token_ids), len(result.token_ids)
        usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
        if self.prediction_ids is not None:  # as OpenAI reports predicted outputs
            accepted = min(result.stats.accepted_tokens, len(self.prediction_ids))
            usage["completion_tokens_details"] = {
                "accepted_prediction_tokens": accepted,
                "rejected_prediction_tokens": len(self.prediction_ids) - accepted,
            }
        return {
            "usage": usage,
            "speculation": {"drafter": self.drafter, **result.stats.to_dict()},
        }

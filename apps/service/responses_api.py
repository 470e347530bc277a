"""``POST /v1/responses``, ``GET`` and ``DELETE /v1/responses/{id}``: OpenAI's Responses API run as a
chat completion (docs/responses-api.md). A request is validated (``ResponsesBody``), translated into its
chat body (``to_chat``, after its ``previous_response_id``'s conversation) and run by
``completions.start``; a 400 on that path names the Responses API's field (``ChatTranslation.rename``);
the chat answer is rewritten by ``responses_answer``. ``ResponseStore`` keeps the last
``ServiceConfig.max_stored_responses`` complete responses not sent with ``store: false``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from flask import Blueprint, Response, jsonify, request

from . import completions, sse
from .answer_format import CHAT
from .config import ServiceConfig
from .limits import current_guard, generating
from .protocol.completions import CompletionRequest, parse_completion_request
from .protocol.errors import RequestError, parse_json_body
from .protocol.openai_responses import ResponseDeleted
from .protocol.openai_responses_request import ChatTranslation, ResponsesBody, to_chat
from .protocol.responses import answer
from .responses_answer import ResponseWriter, assistant_message
from .state import current_state

bp = Blueprint("responses", __name__, url_prefix="/v1")
STORE = "specdraft.responses"
Conversation = tuple[dict[str, Any], ...]


class ResponseStore:
    """Stored responses by id, each with its conversation, the ``capacity`` most recently used
    (thread-safe)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._kept: OrderedDict[str, tuple[Conversation, dict[str, Any]]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._kept)

    def keep(self, response_id: str, conversation: Conversation, response: dict[str, Any]) -> None:
        """Keep ``response`` (the answer's object) and its ``conversation`` under ``response_id``."""
        with self._lock:
            self._kept[response_id] = (conversation, response)
            self._kept.move_to_end(response_id)
            while len(self._kept) > self.capacity:
                self._kept.popitem(last=False)

    def conversation(self, response_id: str) -> Conversation:
        """The stored conversation of ``response_id`` (``RequestError`` naming previous_response_id if none)."""
        with self._lock:
            if response_id not in self._kept:
                raise RequestError(
                    f"previous_response_id {response_id!r} is not a stored response of this server (responses "
                    f"sent with store: false are not kept, and only the last {self.capacity} are)",
                    "previous_response_id",
                    code="previous_response_not_found",
                )
            self._kept.move_to_end(response_id)
            return self._kept[response_id][0]

    def response(self, response_id: str) -> dict[str, Any]:
        """The stored response object of ``response_id`` (a 404 ``RequestError`` if none)."""
        with self._lock:
            if response_id not in self._kept:
                raise _not_found(response_id)
            return self._kept[response_id][1]

    def delete(self, response_id: str) -> None:
        """Forget ``response_id`` (a 404 ``RequestError`` if it is not kept)."""
        with self._lock:
            if self._kept.pop(response_id, None) is None:
                raise _not_found(response_id)


def _not_found(response_id: str) -> RequestError:
    return RequestError(
        f"no stored response {response_id!r} on this server (responses sent with store: false are not kept, "
        "and only the most recent are)",
        "response_id",
        status=404,
        code="response_not_found",
    )


def current_store() -> ResponseStore:
    """The app's store (made on first use, sized by ``ServiceConfig.max_stored_responses``)."""
    state = current_state()
    return state.once(STORE, lambda: ResponseStore(state.config.max_stored_responses))


def parse_responses_request(
    data: dict[str, Any], config: ServiceConfig, store: ResponseStore | None = None
) -> tuple[ResponsesBody, ChatTranslation, CompletionRequest]:
    """A Responses request validated: its body, its chat translation (after the stored conversation
    of its ``previous_response_id``, looked up in ``store``) and the chat request that runs it; a
    ``RequestError`` in the Responses API's names."""
    body = ResponsesBody.parse(data, config)
    history = (
        () if body.previous_response_id is None else (store or ResponseStore(0)).conversation(body.previous_response_id)
    )
    chat = to_chat(body, history)
    try:
        return body, chat, parse_completion_request(chat.body, True, config)
    except RequestError as error:
        raise chat.rename(error) from None


@bp.post("/responses")
@generating
def create_response() -> Response:
    """A response (module docstring): one JSON object, or with ``stream`` the Responses API's events."""
    state, store = current_state(), current_store()
    body, chat, req = parse_responses_request(parse_json_body(request.get_data()), state.config, store)
    try:
        run = completions.start(state, req, CHAT)
    except RequestError as error:
        raise chat.rename(error) from None
    writer, guard = ResponseWriter(body, state.config.model_name), current_guard()

    def done(response: dict[str, Any]) -> None:
        if body.stored:
            store.keep(response["id"], (*chat.conversation, assistant_message(response["output"])), response)

    if body.stream:
        return sse.response(writer.events(run.chunks(guard), done), guard, named=True)
    response = writer.whole(run.whole(guard))
    done(response)
    return jsonify(response)


@bp.get("/responses/<response_id>")
def get_response(response_id: str) -> Response:
    """A stored response object, as its request answered it (404 when it is not kept)."""
    return jsonify(current_store().response(response_id))


@bp.delete("/responses/<response_id>")
def delete_response(response_id: str) -> Response:
    """Forget a stored response: a later ``previous_response_id`` naming it is a 400 (404 when it is not kept)."""
    current_store().delete(response_id)
    return jsonify(answer(ResponseDeleted, id=response_id, object="response.deleted", deleted=True))

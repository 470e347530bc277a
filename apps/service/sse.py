"""Server-sent events, the one streaming driver of the service (completions, RAG, iterative RAG and the
laptop's edge endpoint): ``response(payloads)`` sends each payload as a ``data: {json}`` event and
ends with ``data: [DONE]``.

The payloads are produced while the response is sent, in the request's context. An exception raised
then ends the stream with the ``{"error": ...}`` body the app answers that exception with (``errors``:
a ``RequestError``'s own, or a logged 500's that reveals nothing) and no ``[DONE]``; a stream whose
``guard`` saw its client go (``limits.RequestGuard``) ends with nothing more.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from flask import Response, current_app, stream_with_context

if TYPE_CHECKING:
    from .limits import RequestGuard

DONE_EVENT = "data: [DONE]\n\n"
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}  # no proxy holds the events back


def event(payload: dict[str, Any], named: bool = False) -> str:
    """One ``data:`` event carrying ``payload`` as JSON (``named``: after an ``event:`` line naming the
    payload's ``type``, as the Responses API's events are sent)."""
    name = f"event: {payload['type']}\n" if named and "type" in payload else ""
    return f"{name}data: {json.dumps(payload)}\n\n"


def response(payloads: Iterable[dict[str, Any]], guard: RequestGuard | None = None, named: bool = False) -> Response:
    """``payloads`` as a ``text/event-stream`` response (module docstring; ``named``: see ``event``)."""

    def events() -> Iterator[str]:
        try:
            for payload in payloads:
                yield event(payload, named)
        except Exception as error:  # the app's answer to it, as the stream's last event
            yield event(current_app.make_response(current_app.handle_user_exception(error)).get_json())
            return
        if guard is None or not guard.client_gone:
            yield DONE_EVENT

    return Response(stream_with_context(events()), mimetype="text/event-stream", headers=HEADERS)

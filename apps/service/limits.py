"""Load limits (docs/deployment.md): ``GenerationGate`` admits ``max_concurrent`` generations and
queues ``max_queue`` more (each at most ``queue_timeout_s``), refusing the rest with a 429 and
``Retry-After``; ``@generating`` holds a place from the view's start until its response (or stream)
is closed; a ``RequestGuard`` per request says when its generation should stop: past
``request_timeout_s`` (it ends with what it has, ``time_limit_reached``) or its client gone (waitress's
``waitress.client_disconnected``, see ``server``; its KV cache is freed).
"""

from __future__ import annotations

import functools
import math
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, TypeVar

from flask import Response, current_app, make_response, request

from .protocol.errors import RequestError

Piece = TypeVar("Piece")


@dataclass(frozen=True)
class LimitConfig:
    """``max_concurrent``: generations at once (the model is shared; more only interleave passes).
    ``max_queue``: requests that may wait for a place; ``queue_timeout_s``: how long one waits.
    ``request_timeout_s``: the longest a generation may run."""

    max_concurrent: int = 2
    max_queue: int = 16
    queue_timeout_s: float = 60.0
    request_timeout_s: float = 600.0

    def __post_init__(self) -> None:
        check_settings(self, {"max_concurrent": 1, "max_queue": 0}, ("queue_timeout_s", "request_timeout_s"))

    @property
    def server_threads(self) -> int:
        """WSGI threads so that every admitted or queued request has one, plus some for health,
        metrics and the 429s themselves (otherwise the server would queue requests unseen)."""
        return self.max_concurrent + self.max_queue + 4


def check_settings(config: object, least: dict[str, int], seconds: tuple[str, ...] = ()) -> None:
    """A config's ``ValueError`` unless each field of ``least`` is at least its value and each of
    ``seconds`` a positive, finite number of seconds."""
    for name, low in least.items():
        if getattr(config, name) < low:
            raise ValueError(f"{name} must be >= {low}, got {getattr(config, name)}")
    for name in seconds:
        if not (math.isfinite(getattr(config, name)) and getattr(config, name) > 0):
            raise ValueError(f"{name} must be a positive number of seconds, got {getattr(config, name)}")


class Overloaded(RequestError):
    """No place for a generation: a 429 with ``Retry-After``."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        headers = {"Retry-After": str(retry_after_s)}
        super().__init__(message, None, 429, "server_busy", "rate_limit_exceeded", headers)
        self.retry_after_s = retry_after_s


class GenerationGate:
    """Admission for generating requests (thread-safe). ``enter()`` blocks until a place is free,
    or raises ``Overloaded``; every successful ``enter()`` is paired with one ``leave()``."""

    def __init__(self, config: LimitConfig) -> None:
        self.config = config
        self._cond = threading.Condition()
        self.running = 0
        self.waiting = 0
        self.rejected = 0
        self._mean_s = 5.0  # running mean of how long a place is held (for Retry-After)

    def enter(self) -> float:
        """Take a place; returns the monotonic time it was taken (give it to ``leave``)."""
        with self._cond:
            if self.running >= self.config.max_concurrent:
                if self.waiting >= self.config.max_queue:
                    self.rejected += 1
                    raise Overloaded(
                        f"the server is busy: {self.running} generations running and {self.waiting} waiting "
                        "(the most it queues); retry later",
                        self._retry_after(),
                    )
                self.waiting += 1
                try:
                    admitted = self._cond.wait_for(
                        lambda: self.running < self.config.max_concurrent, self.config.queue_timeout_s
                    )
                finally:
                    self.waiting -= 1
                if not admitted:
                    self.rejected += 1
                    raise Overloaded(
                        f"the server is busy: no generation place freed within {self.config.queue_timeout_s:g} s; "
                        "retry later",
                        self._retry_after(),
                    )
            self.running += 1
            return time.monotonic()

    def leave(self, entered: float) -> None:
        with self._cond:
            self.running -= 1
            self._mean_s = 0.8 * self._mean_s + 0.2 * (time.monotonic() - entered)
            self._cond.notify()

    def _retry_after(self) -> int:
        ahead = self.running + self.waiting
        return max(1, math.ceil(self._mean_s * (ahead + 1) / self.config.max_concurrent))


def generating(view: Callable[..., Response]) -> Callable[..., Response]:
    """Run ``view`` holding a place in the app's ``GenerationGate`` until its response is closed."""

    @functools.wraps(view)
    def wrapper(*args, **kwargs) -> Response:
        gate: GenerationGate = current_app.extensions["specdraft.gate"]
        entered = gate.enter()  # Overloaded: a 429 (``errors``)
        released = threading.Event()

        def release() -> None:
            if not released.is_set():
                released.set()
                gate.leave(entered)

        request.environ["specdraft.guard"] = RequestGuard.start(gate.config, request.environ)
        try:
            response = make_response(view(*args, **kwargs))
        except BaseException:
            release()
            raise
        if not response.is_streamed:  # the answer is complete: generation is over
            release()
            return response
        body = response.response

        def streamed() -> Iterator[Any]:
            try:
                yield from body
            finally:  # the stream ended, failed, or its client went away
                release()

        response.response = streamed()
        response.call_on_close(release)  # a stream that never started
        return response

    return wrapper


@dataclass
class RequestGuard:
    """When one request's generation should stop: past ``deadline`` (monotonic), or its client gone."""

    deadline: float
    disconnected: Callable[[], bool]
    timed_out: bool = False
    client_gone: bool = False

    @classmethod
    def start(cls, config: LimitConfig, environ: dict) -> "RequestGuard":
        check = environ.get("waitress.client_disconnected")
        return cls(time.monotonic() + config.request_timeout_s, check if callable(check) else (lambda: False))

    def should_stop(self) -> bool:
        if not self.client_gone and self.disconnected():
            self.client_gone = True
        if not self.timed_out and time.monotonic() > self.deadline:
            self.timed_out = True
        return self.client_gone or self.timed_out


def current_guard() -> RequestGuard:
    """The guard of the current request (a guard that never stops outside ``@generating`` views)."""
    guard = request.environ.get("specdraft.guard")
    return guard if guard is not None else RequestGuard(math.inf, lambda: False)


def until_stopped(stream: Iterable[Piece], guard: RequestGuard) -> Iterator[Piece]:
    """The pieces of a generation (a ``GenerationStream``, ``RAGStream``, ...) until its end, or until
    ``guard`` says stop after one of them (the one place a generation loop asks the guard)."""
    for piece in stream:
        yield piece
        if guard.should_stop():
            break


def drain(stream: Any, guard: RequestGuard) -> Any:
    """Iterate a generation stream to its end, or until ``guard`` says stop; returns its result (what
    was produced so far when stopped early)."""
    for _ in until_stopped(stream, guard):
        pass
    return stream.stop()

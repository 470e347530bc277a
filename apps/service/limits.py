"""Load limits: a bounded number of concurrent generations, a bounded queue, a time limit, and
stopping work nobody is waiting for.

- ``GenerationGate``: at most ``max_concurrent`` requests generate at once; up to ``max_queue``
  more wait (each at most ``queue_timeout_s``); a request that finds the queue full, or waits too
  long, gets a 429 with ``Retry-After`` (seconds, estimated from recent generation times).
- ``@generating`` marks a view that generates: it takes a place in the gate before the view runs
  and gives it back when the view returns, or, for a streamed response, when the stream ends or
  is closed.
- ``RequestGuard``: per request, a deadline (``request_timeout_s`` after it started generating)
  and whether its client has gone (waitress's ``waitress.client_disconnected``, available when the
  server reads ahead: see ``server``). Generation loops ask ``guard.should_stop()`` between pieces:
  a request past its time limit ends early with what it has (``finish_reason`` "length" and
  ``time_limit_reached`` in its ``speculation``); one whose client left stops at once, and its
  target session and KV cache are freed.
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
        if self.max_concurrent < 1:
            raise ValueError(f"max_concurrent must be >= 1, got {self.max_concurrent}")
        if self.max_queue < 0:
            raise ValueError(f"max_queue must be >= 0, got {self.max_queue}")
        for name in ("queue_timeout_s", "request_timeout_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive number of seconds, got {value}")

    @property
    def server_threads(self) -> int:
        """WSGI threads so that every admitted or queued request has one, plus some for health,
        metrics and the 429s themselves (otherwise the server would queue requests unseen)."""
        return self.max_concurrent + self.max_queue + 4


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

"""The edge client's HTTP transport: JSON over one keep-alive connection, stdlib only (no torch).

``EdgeConnection(url, key)`` sends ``request(method, path, body)`` with ``Authorization: Bearer KEY``
and answers the decoded JSON object. Two kinds of failure, which the client treats differently:

- ``EdgeRefused``: the server answered with a 4xx (``status``, ``message``, ``code``, ``param`` from
  its JSON error): the request was wrong, or the session is gone (404) or out of step (409). Sending
  it again does not help.
- ``ServerUnavailable``: no answer (connection refused, reset, timed out), a 5xx, a 429 (busy), or
  an answer that is not the server's JSON. The server may come back; the client keeps generating locally and
  retries (``specdraft.edge.client``).

``last_ms`` is the round-trip time of the last call the server answered (a refusal included).

One connection, used under a lock (calls from several threads are serialised). A request that fails
on a connection kept alive from an earlier call is sent once more on a fresh connection (the server
may have closed it while idle); calls that change a session carry its ``context_length`` so that a
repeat of an applied call is refused (409) rather than applied twice.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit


class EdgeRefused(Exception):
    """The server refused the request (a 4xx)."""

    def __init__(self, status: int, message: str, code: str | None = None, param: str | None = None) -> None:
        super().__init__(f"{status}: {message}")
        self.status, self.message, self.code, self.param = status, message, code, param


class ServerUnavailable(Exception):
    """No usable answer: connection refused or lost, a timeout, a 5xx, or an answer that is not JSON."""


@dataclass(frozen=True)
class TransportConfig:
    """``timeout_s``: the longest one request may take (connect, send, answer)."""

    timeout_s: float = 30.0

    def __post_init__(self) -> None:
        if not self.timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {self.timeout_s}")


class EdgeConnection:
    def __init__(self, url: str, key: str, config: TransportConfig = TransportConfig()) -> None:
        parts = urlsplit(url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"the server URL must be http(s)://HOST[:PORT], got {url!r}")
        self.url = url.rstrip("/")
        self._scheme, self._host, self._port = parts.scheme, parts.hostname, parts.port
        self._prefix = parts.path
        self._key = key
        self.config = config
        self._conn: http.client.HTTPConnection | None = None
        self._used = False  # whether the current connection has answered a request already
        self._lock = threading.Lock()
        self.requests = 0  # round trips that got an answer
        self.last_ms: float | None = None  # the round-trip time of the last call answered (ms)

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            cls = http.client.HTTPSConnection if self._scheme == "https" else http.client.HTTPConnection
            self._conn = cls(self._host, self._port, timeout=self.config.timeout_s)
            self._used = False
        return self._conn

    def close(self) -> None:
        with self._lock:
            self._drop()

    def __enter__(self) -> "EdgeConnection":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # a connection dropped without close() does not leak its socket
        conn = getattr(self, "_conn", None)
        if conn is not None:
            conn.close()

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def request(self, method: str, path: str, body: dict | None = None) -> dict[str, Any]:
        """The server's JSON answer to ``method path`` (``body`` sent as JSON; DELETE sends ``{}``)."""
        data = json.dumps(body if body is not None else {}).encode() if method != "GET" else None
        headers = {"Authorization": f"Bearer {self._key}", "Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        with self._lock:
            started = time.perf_counter()
            for attempt in range(2):
                reused = self._conn is not None and self._used
                try:
                    conn = self._connection()
                    conn.request(method, self._prefix + path, data, headers)
                    response = conn.getresponse()
                    raw = response.read()
                    status = response.status
                    self._used = True
                    if response.getheader("Connection", "").lower() == "close":
                        self._drop()
                except (ConnectionError, http.client.HTTPException, socket.timeout, OSError) as error:
                    self._drop()
                    timed_out = isinstance(error, (socket.timeout, TimeoutError))
                    if reused and attempt == 0 and not timed_out:
                        continue  # the server closed an idle keep-alive connection: once more, fresh
                    raise ServerUnavailable(f"{method} {path}: {type(error).__name__}: {error}") from None
                self.requests += 1
                self.last_ms = (time.perf_counter() - started) * 1000
                return _answer(method, path, status, raw)
        raise AssertionError("unreachable")


def _answer(method: str, path: str, status: int, raw: bytes) -> dict[str, Any]:
    try:
        decoded = json.loads(raw) if raw else {}
    except ValueError:
        decoded = None
    if status >= 500 or status == 429 or not isinstance(decoded, dict):  # 429: busy, retry later
        raise ServerUnavailable(
            f"{method} {path}: HTTP {status}" + ("" if isinstance(decoded, dict) else " (not a JSON object)")
        )
    if status >= 400:
        error = decoded.get("error") if isinstance(decoded.get("error"), dict) else {}
        raise EdgeRefused(status, str(error.get("message", f"HTTP {status}")), error.get("code"), error.get("param"))
    return decoded

"""A TCP proxy that adds network delay, and drops connections on demand: the edge benchmark's and the
edge fault tests' network between a laptop client and the verify server (both on this machine).

``DelayProxy(upstream_port, ProxyConfig(rtt_s=0.02)).start()`` listens on ``127.0.0.1:<port>``
(``.url``) and forwards every connection to ``upstream_host:upstream_port``. Each chunk of bytes is
delivered ``rtt_s / 2`` after it was read, in each direction, so one request/answer exchange takes
``rtt_s`` longer than direct loopback (the link's bandwidth is not limited: chunks in flight overlap,
as on a real long link). Byte order per direction is kept.

Faults (``drop_next``): the next ``count`` calls lose their connection, both sides closed at once:

- ``when="request"``: the request's first bytes are not forwarded (the server never sees the call);
- ``when="answer"``: the request is forwarded, and the connection is closed when the server's answer
  starts (the server applied the call; the client never hears of it: the hard case for a retry).

``dropped`` counts connections closed that way, ``connections`` those accepted, ``delivered_up`` /
``delivered_down`` the chunks handed to the server / the client (so a test can act while a call is
in flight). Stdlib only, threads.
"""

from __future__ import annotations

import queue
import socket
import threading
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class ProxyConfig:
    """``rtt_s``: added round-trip delay (half each way); ``upstream_host``: where the server listens;
    ``chunk``: the most bytes read at once."""

    rtt_s: float = 0.0
    upstream_host: str = "127.0.0.1"
    chunk: int = 65536

    def __post_init__(self) -> None:
        if self.rtt_s < 0 or self.chunk < 1:
            raise ValueError(f"need rtt_s >= 0 and chunk >= 1, got {self.rtt_s}, {self.chunk}")


class _Link:
    """One proxied connection: a client socket, an upstream socket, four threads."""

    def __init__(self, proxy: "DelayProxy", client: socket.socket, upstream: socket.socket) -> None:
        self.proxy, self.client, self.upstream = proxy, client, upstream
        self.closed = False
        self.drop_on_answer = False
        self._lock = threading.Lock()

    def start(self) -> None:
        for source, sink, upward in ((self.client, self.upstream, True), (self.upstream, self.client, False)):
            lane: queue.Queue = queue.Queue()
            threading.Thread(target=self._read, args=(source, lane, upward), daemon=True).start()
            threading.Thread(target=self._write, args=(sink, lane, upward), daemon=True).start()

    def close(self) -> None:
        with self._lock:
            if self.closed:
                return
            self.closed = True
        for sock in (self.client, self.upstream):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        self.proxy._forget(self)

    def _read(self, source: socket.socket, lane: queue.Queue, upward: bool) -> None:
        delay = self.proxy.config.rtt_s / 2
        while not self.closed:
            try:
                data = source.recv(self.proxy.config.chunk)
            except OSError:
                data = b""
            if data:
                fault = self.proxy._take_drop() if upward and not self.drop_on_answer else None
                if fault == "request":
                    self.proxy._count_drop()
                    self.close()
                    return
                if fault == "answer":
                    self.drop_on_answer = True
                if not upward and self.drop_on_answer:
                    self.proxy._count_drop()
                    self.close()
                    return
            lane.put((time.monotonic() + delay, data))
            if not data:
                return

    def _write(self, sink: socket.socket, lane: queue.Queue, upward: bool) -> None:
        while True:
            due, data = lane.get()
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            if self.closed:
                return
            try:
                if data:
                    sink.sendall(data)
                    self.proxy._delivered(upward)
                else:  # the other side finished sending: pass the half-close on
                    sink.shutdown(socket.SHUT_WR)
                    return
            except OSError:
                self.close()
                return


class DelayProxy:
    """See the module docstring. Use as a context manager, or ``start()`` / ``close()``."""

    def __init__(self, upstream_port: int, config: ProxyConfig = ProxyConfig()) -> None:
        self.upstream_port = upstream_port
        self.config = config
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._links: set[_Link] = set()
        self._lock = threading.Lock()
        self._drops: list[str] = []
        self.connections = 0
        self.dropped = 0
        self.delivered_up = 0  # chunks handed to the server (a request has reached it)
        self.delivered_down = 0  # chunks handed to the client
        self._stopped = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "DelayProxy":
        self._listener.listen(64)
        threading.Thread(target=self._accept, daemon=True, name=f"delay-proxy-{self.port}").start()
        return self

    def __enter__(self) -> "DelayProxy":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def drop_next(self, count: int = 1, when: str = "answer") -> None:
        """Make the next ``count`` calls lose their connection (``when``: "request" or "answer")."""
        if when not in ("request", "answer"):
            raise ValueError(f"when must be 'request' or 'answer', got {when!r}")
        with self._lock:
            self._drops += [when] * count

    def pending_drops(self) -> int:
        with self._lock:
            return len(self._drops)

    def close(self) -> None:
        self._stopped = True
        try:
            self._listener.close()
        except OSError:
            pass
        with self._lock:
            links = list(self._links)
        for link in links:
            link.close()

    def _accept(self) -> None:
        while not self._stopped:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            try:
                upstream = socket.create_connection((self.config.upstream_host, self.upstream_port), timeout=10)
                upstream.settimeout(None)
                upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:  # the server is down: the client sees its connection closed
                client.close()
                continue
            link = _Link(self, client, upstream)
            with self._lock:
                self._links.add(link)
                self.connections += 1
            link.start()

    def _take_drop(self) -> str | None:
        with self._lock:
            return self._drops.pop(0) if self._drops else None

    def _count_drop(self) -> None:
        with self._lock:
            self.dropped += 1

    def _delivered(self, upward: bool) -> None:
        with self._lock:
            if upward:
                self.delivered_up += 1
            else:
                self.delivered_down += 1

    def _forget(self, link: _Link) -> None:
        with self._lock:
            self._links.discard(link)

"""The load test's clients: HTTP calls on loopback, concurrent client threads, the server's memory.

- ``check_loopback(url)``: the load test only ever targets this machine (``localhost``,
  ``127.0.0.0/8``, ``::1``); any other host is a ``ValueError``.
- ``Client.post``: one JSON request (``Authorization: Bearer KEY`` with a key); the ``Reply``
  carries the status, the JSON answer, the client's wall seconds and ``Retry-After``. Connection
  failures and timeouts are replies with status 0, never exceptions.
- ``run_clients``: ``clients`` threads, each sending the requests in its own seeded order, in a
  cycle, until ``deadline`` (a request begun before it runs to its end) or until the shared
  ``budget`` of requests is spent. A 429 is recorded and its client waits ``Retry-After`` (at most
  until the deadline) before its next request.
- ``MemorySampler``: a thread that reads the server process's resident memory every
  ``interval_s`` (psutil if installed, else ``/proc/PID/status``).
"""

from __future__ import annotations

import ipaddress
import json
import random
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from benchmarks.load_requests import DOCUMENTS, LoadRequest, answer_of, stats_of
from specdraft.apps.bench.datasets.archive_cache import say

OVERLOADED = 429
NO_RESPONSE = 0  # the status of a request that got no HTTP answer (refused, reset, timed out)
STATS_KEPT = ("generated_tokens", "target_forward_passes", "mean_accepted_tokens", "prefill_s", "wall_s")


def check_loopback(url: str) -> str:
    """``url`` without a trailing slash, if its host is this machine; else ``ValueError``."""
    parsed = urllib.parse.urlsplit(url)
    host = parsed.hostname or ""
    if parsed.scheme not in ("http", "https") or not host:
        raise ValueError(f"--url must be an http(s) URL such as http://127.0.0.1:8000, got {url!r}")
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ValueError(
            f"refusing to load {host!r}: the load test only targets this machine (localhost, 127.0.0.1, [::1])"
        )
    return url.rstrip("/")


@dataclass(frozen=True)
class Reply:
    status: int
    body: Any
    latency_s: float
    retry_after_s: float = 0.0
    error: str = ""


class Client:
    """JSON over HTTP to ``base_url`` (checked to be loopback), with an optional bearer ``key``."""

    def __init__(self, base_url: str, key: str | None = None, timeout_s: float = 600.0) -> None:
        self.base_url = check_loopback(base_url)
        self.key = key
        self.timeout_s = timeout_s

    def post(self, path: str, body: dict) -> Reply:
        return self._call(path, json.dumps(body).encode("utf-8"))

    def get(self, path: str) -> Reply:
        return self._call(path, None)

    def _call(self, path: str, data: bytes | None) -> Reply:
        headers = {"Content-Type": "application/json"} | ({"Authorization": f"Bearer {self.key}"} if self.key else {})
        request = urllib.request.Request(self.base_url + path, data=data, headers=headers)
        start = time.perf_counter()
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                raw, status, headers_in = response.read(), response.status, response.headers
        except urllib.error.HTTPError as error:
            raw, status, headers_in = error.read(), error.code, error.headers
        except OSError as error:  # refused, reset, timed out: no HTTP answer
            return Reply(NO_RESPONSE, None, time.perf_counter() - start, error=f"{type(error).__name__}: {error}")
        latency = time.perf_counter() - start
        try:
            answer = json.loads(raw)
        except ValueError:
            answer = raw.decode("utf-8", "replace")
        retry_after = headers_in.get("Retry-After") if headers_in else None
        return Reply(status, answer, latency, float(retry_after) if retry_after and retry_after.isdigit() else 0.0)


@dataclass
class Outcome:
    """One request sent under load (or alone, in the sequential pass)."""

    request: str  # LoadRequest.id
    kind: str
    mode: str
    client: int
    start_s: float  # since the run began
    latency_s: float
    status: int
    identical: bool | None = None  # to the request's sequential answer (None: no answer to compare)
    stats: dict = field(default_factory=dict)
    error: str = ""


def outcome_of(
    request: LoadRequest, mode: str, client: int, start_s: float, reply: Reply, expected: dict | None
) -> tuple[Outcome, dict | None]:
    """The ``Outcome`` of one reply and its answer (``answer_of``; None unless a 200)."""
    outcome = Outcome(
        request.id,
        request.kind,
        mode,
        client,
        round(start_s, 4),
        round(reply.latency_s, 4),
        reply.status,
        error=reply.error,
    )
    if reply.status != 200:
        if not outcome.error:
            error = reply.body.get("error", {}) if isinstance(reply.body, dict) else {}
            outcome.error = str(error.get("message", reply.body))[:300] if isinstance(error, dict) else str(error)[:300]
        return outcome, None
    answer = answer_of(request.kind, reply.body)
    stats = stats_of(request.kind, reply.body)
    outcome.stats = {name: stats[name] for name in STATS_KEPT if name in stats}
    outcome.identical = None if expected is None else answer == expected
    return outcome, answer


def run_clients(
    client: Client,
    requests: Sequence[LoadRequest],
    mode: str,
    clients: int,
    deadline: float,
    budget: "RequestBudget",
    expected: dict[str, dict],
    seed: int,
    clock: Callable[[], float],
) -> list[Outcome]:
    """``clients`` threads sending ``requests`` in ``mode`` until ``deadline`` (``clock()`` seconds)
    or until ``budget`` is spent; every answer compared with ``expected[request id]``."""
    outcomes: list[Outcome] = []
    lock = threading.Lock()

    def work(number: int) -> None:
        order = list(requests)
        random.Random(seed * 1000 + number).shuffle(order)
        turn = 0
        while clock() < deadline and budget.take():
            request = order[turn % len(order)]
            turn += 1
            start = clock()
            reply = client.post(request.path, request.bodies[mode])
            outcome, _ = outcome_of(request, mode, number, start, reply, expected.get(request.id))
            with lock:
                outcomes.append(outcome)
            if reply.status == OVERLOADED:
                time.sleep(max(0.0, min(reply.retry_after_s or 1.0, deadline - clock())))

    threads = [
        threading.Thread(target=work, args=(number,), name=f"load-client-{number}", daemon=True)
        for number in range(clients)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sorted(outcomes, key=lambda o: o.start_s)


class RequestBudget:
    """At most ``limit`` requests in all, shared by every client thread."""

    def __init__(self, limit: int) -> None:
        self.left = limit
        self._lock = threading.Lock()

    def take(self) -> bool:
        with self._lock:
            if self.left <= 0:
                return False
            self.left -= 1
            return True


def resident_bytes(pid: int) -> int | None:
    """The resident memory of process ``pid`` in bytes (None when it cannot be read)."""
    try:
        import psutil
    except ImportError:
        psutil = None
    if psutil is not None:
        try:
            return psutil.Process(pid).memory_info().rss
        except psutil.Error:
            return None
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024  # the file counts kB
    except (OSError, ValueError, IndexError):
        return None
    return None


def listening_pid(port: int) -> int | None:
    """The process listening on TCP ``port`` on this machine (psutil only; None when unknown)."""
    try:
        import psutil
    except ImportError:
        return None
    try:
        connections = psutil.net_connections(kind="tcp")
    except (psutil.Error, OSError):  # AccessDenied on some systems
        return None
    for connection in connections:
        if (
            connection.status == psutil.CONN_LISTEN
            and connection.laddr
            and connection.laddr.port == port
            and connection.pid
        ):
            return connection.pid
    return None


class MemorySampler:
    """Samples ``resident_bytes(pid)`` every ``interval_s`` while running (a context manager);
    ``samples`` are ``(seconds since clock's zero, bytes)``."""

    def __init__(self, pid: int, interval_s: float, clock: Callable[[], float]) -> None:
        self.pid = pid
        self.interval_s = interval_s
        self.clock = clock
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memory-sampler", daemon=True)

    def sample(self) -> None:
        value = resident_bytes(self.pid)
        if value is not None:
            self.samples.append((round(self.clock(), 3), value))

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval_s)

    def __enter__(self) -> "MemorySampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()


def add_documents(client: Client, index: str) -> None:
    reply = client.post("/v1/rag/documents", {"index": index, "documents": list(DOCUMENTS)})
    if reply.status != 200:
        raise RuntimeError(f"adding the documents failed: HTTP {reply.status} {reply.body or reply.error}")


def sequential_pass(
    client: Client, requests: Sequence[LoadRequest], modes: Sequence[str], clock
) -> tuple[dict[str, dict], list[Outcome]]:
    """Each request alone in each mode: the expected answers (the first mode's) and the outcomes."""
    expected: dict[str, dict] = {}
    outcomes = []
    for request in requests:
        for mode in modes:
            start = clock()
            reply = client.post(request.path, request.bodies[mode])
            if reply.status != 200:
                raise RuntimeError(
                    f"{request.id} ({mode}) failed alone: HTTP {reply.status} {reply.body or reply.error}"
                )
            outcome, answer = outcome_of(request, mode, -1, start, reply, expected.get(request.id))
            expected.setdefault(request.id, answer)
            outcomes.append(outcome)
            say(f"alone: {request.id} {mode}: {outcome.latency_s:.2f} s")
    return expected, outcomes

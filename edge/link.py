"""EdgeLink: one generation's hold on the verify server: its session, the session's limits, and
losing and regaining it.

Online (a session open on ``specdraft serve --edge``), ``verify`` sends one draft in a worker thread
(one HTTP round trip: the server follows its own choices, or accepts draft distributions by
rejection sampling, and commits) and, while the answer is on its way, calls ``while_waiting`` (the
drafter's pipeline) until it says there is nothing more to do.

Offline (a timeout, connection refused, a 5xx, or a session the server no longer has: ``lose``),
``poll(context)`` retries in the background with exponential back-off by opening a new session from
the whole context shown so far; once that call is answered, tokens shown while it was on its way
are appended (``/append``) and the link is online again. ``ServerUnavailable`` and the 4xx the
server answers (``EdgeRefused``) come from ``specdraft.edge.transport``.
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Sequence

from specdraft.sampling import SamplingParams

from .stats import EdgeStats
from .transport import EdgeConnection, EdgeRefused, ServerUnavailable

FATAL = (400, 401, 403, 409)  # refusals of a first session: a bad prompt, a wrong key, another tokenizer


@dataclass(frozen=True)
class SessionLimits:
    """What the server's session takes (before the first session: no limit but one branch)."""

    max_draft_nodes: int = 1 << 30
    max_branches: int = 1
    max_length: int = 1 << 30
    draft_probs_max_entries: int = 0  # 0: a server that only compares tokens


class EdgeLink:
    def __init__(
        self,
        connection: EdgeConnection,
        fingerprint: str,
        sampling: SamplingParams,
        seed: int,
        stats: EdgeStats,
        retry_initial_s: float,
        retry_max_s: float,
    ) -> None:
        self.connection = connection
        self._fingerprint, self._sampling, self._seed = fingerprint, sampling, seed
        self.stats = stats
        self._retry_initial_s, self._retry_max_s = retry_initial_s, retry_max_s
        self.session: str | None = None
        self.limits = SessionLimits()
        self.server_len = 0
        self.passes = 0  # of the open session
        self.passes_closed = 0  # of sessions given up
        self.retry_at, self.backoff = 0.0, retry_initial_s  # offline: when to try the server next
        self._reconnect: Future | None = None  # a session being opened in the worker
        self._reconnect_from = 0  # the context's length when it was asked for
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="edge-verify")

    @property
    def online(self) -> bool:
        return self.session is not None

    @property
    def forward_passes(self) -> int:
        """The server's passes over every session of this generation."""
        return self.passes_closed + self.passes

    # --- sessions -----------------------------------------------------------------------------------
    def start(self, context: Sequence[int]) -> None:
        """Open the first session; a server out of reach leaves the link offline. Raises
        ``EdgeRefused`` for a refusal that generating locally would not mend (``FATAL``)."""
        try:
            self._adopt(self._open(context))
        except (ServerUnavailable, EdgeRefused) as error:
            if isinstance(error, EdgeRefused) and error.status in FATAL:
                raise
            self.lose()

    def _open(self, context: Sequence[int]) -> dict:
        params = self._sampling
        return self.connection.request(
            "POST",
            "/v1/edge/sessions",
            {
                "prompt": list(context),
                "tokenizer": self._fingerprint,
                "temperature": params.temperature,
                "top_p": params.top_p,
                "top_k": params.top_k,
                "seed": self._seed,
            },
        )

    def _adopt(self, answer: dict) -> None:
        self.session, self.server_len, self.passes = answer["id"], answer["context_length"], answer["forward_passes"]
        self.limits = SessionLimits(
            answer["max_draft_nodes"],
            answer["max_branches"],
            answer["max_length"],
            int(answer.get("draft_probs_max_entries", 0)),
        )
        self.stats.round_trips += 1

    def lose(self) -> None:
        """The server is out of reach (or forgot the session): offline, retrying at once."""
        if self.session is not None:
            self.stats.server_losses += 1
            self.passes_closed += self.passes
            self.passes, self.session = 0, None
        self.retry_at, self.backoff = time.monotonic(), self._retry_initial_s

    def poll(self, context: Sequence[int]) -> bool:
        """Whether the link is online, after starting or collecting a reconnection (module docstring)."""
        if self.session is not None:
            return True
        reconnect = self._reconnect
        if reconnect is None and time.monotonic() >= self.retry_at:
            self._reconnect_from = len(context)
            self._reconnect = reconnect = self.pool.submit(self._open, list(context))
        if reconnect is None or not reconnect.done():
            return False
        self._reconnect = None
        try:
            self._adopt(reconnect.result())
            extra = list(context[self._reconnect_from :])  # shown while the session was being opened
            if extra:
                answer = self.connection.request(
                    "POST",
                    f"/v1/edge/sessions/{self.session}/append",
                    {"tokens": extra, "context_length": self.server_len},
                )
                self.stats.round_trips += 1
                self.server_len, self.passes = answer["context_length"], answer["forward_passes"]
            self.stats.reconnects += 1
            return True
        except (ServerUnavailable, EdgeRefused):
            self.session = None
            self.backoff = min(self._retry_max_s, self.backoff * 2)
            self.retry_at = time.monotonic() + self.backoff
            return False

    # --- verification -------------------------------------------------------------------------------
    def verify(self, tree: dict, while_waiting: Callable[[], bool]) -> dict:
        """The server's answer to the draft ``tree`` (its wire fields); ``while_waiting()`` runs
        until it returns False or the answer is in. Raises ``ServerUnavailable``/``EdgeRefused``."""
        assert self.session is not None, "verify() needs an open session"
        sent = time.perf_counter()
        future = self.pool.submit(self._verify, self.session, {**tree, "context_length": self.server_len})
        drafted = 0
        while not future.done() and while_waiting():
            drafted += 1
        drafting_ended = time.perf_counter()
        answer, answered = future.result()
        self.stats.round_trips += 1
        self.stats.in_flight_s += answered - sent
        if drafted:
            self.stats.overlap_s += min(drafting_ended, answered) - sent
        self.server_len, self.passes = answer["context_length"], answer["forward_passes"]
        return answer

    def _verify(self, session: str, body: dict) -> tuple[dict, float]:
        answer = self.connection.request("POST", f"/v1/edge/sessions/{session}/verify", body)
        return answer, time.perf_counter()

    def close(self) -> None:
        """Close the session (frees the server's cache now) and the worker."""
        if self.session is not None:
            session, self.session = self.session, None
            self.passes_closed += self.passes
            self.passes = 0
            try:
                self.connection.request("DELETE", f"/v1/edge/sessions/{session}")
            except (ServerUnavailable, EdgeRefused):
                pass
        self.pool.shutdown(wait=False, cancel_futures=True)  # a reconnection still on its way ends on its own

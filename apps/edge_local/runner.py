"""EdgeRunner: one generation at a time through ``EdgeClient`` against the remote verify server.

``EdgeRunner(config, draft_model)`` owns the laptop's draft model (a llama.cpp or transformers
model sharing the server model's tokenizer) and runs ``EdgeClient.stream`` for each request under a
lock: the draft model is used by one generation at a time, so concurrent requests wait their turn.
Each generation gets its own ``TimedConnection`` (an ``EdgeConnection`` that records the round-trip
time of every answered call) and yields ``Update``s as the text becomes final:

- ``text`` with ``verified`` (False: written by the local model while the server was unreachable),
- ``drafted``: the local model's draft past the text, waiting for (or in) a verification,
- ``round_trip_ms`` (of the last answered server call, None before any) and ``round_trips``.

``finish()`` then gives the ``EdgeResult`` (text, token ids, per-token ``verified``, ``stats`` with
``round_trips``, ``server_forward_passes``, ``unverified_tokens``, ...). ``server_info()`` asks the
server's ``GET /v1/edge/info`` once (model name, context, vocabulary); while the server cannot be
reached it answers None (asking again ``INFO_RETRY_S`` later) and the endpoint still works (the
text is then unverified).

Imports no torch: the edge client, numpy and the standard library (plus the draft model's backend).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from specdraft import GenerationConfig
from specdraft.edge import EdgeConnection, EdgeRefused, ServerUnavailable, TransportConfig
from specdraft.edge.client import EdgeClient, EdgeResult

from .config import EdgeLocalConfig

DRAFT_CONTEXT = 4  # tokens of the text decoded before the draft, so that its leading space survives
INFO_RETRY_S = 5.0  # after the server did not answer its info call, ask again after this long


class TimedConnection(EdgeConnection):
    """An ``EdgeConnection`` that keeps the round-trip time of its last answered call (ms)."""

    def __init__(self, url: str, key: str, config: TransportConfig) -> None:
        super().__init__(url, key, config)
        self.last_ms: float | None = None

    def request(self, method: str, path: str, body: dict | None = None) -> dict[str, Any]:
        started = time.perf_counter()
        try:
            answer = super().request(method, path, body)
        except EdgeRefused:
            self.last_ms = (time.perf_counter() - started) * 1000
            raise
        self.last_ms = (time.perf_counter() - started) * 1000
        return answer


@dataclass(frozen=True)
class Update:
    """A piece of final text and the state of the generation when it became final."""

    text: str
    verified: bool
    drafted: str
    round_trip_ms: float | None
    round_trips: int


class Generation:
    """One running generation: iterate ``updates()``, then read ``finish()``."""

    def __init__(self, runner: "EdgeRunner", prompt_ids: Sequence[int], generation: GenerationConfig) -> None:
        self.runner = runner
        self.connection = TimedConnection(
            runner.config.server, runner.config.key, TransportConfig(timeout_s=runner.config.timeout_s)
        )
        self.client = EdgeClient(self.connection, runner.draft_model, runner.config.client)
        self.run = self.client.stream(list(prompt_ids), generation)
        self._result: EdgeResult | None = None

    def updates(self) -> Iterator[Update]:
        """The text as it becomes final. Raises ``EdgeRefused`` when the server refuses the session
        (a wrong key, another tokenizer): generating locally would not help then."""
        try:
            for piece in self.run.steps():
                yield Update(
                    piece.text,
                    piece.source != "unverified",
                    self._drafted(),
                    self.connection.last_ms,
                    self.run.stats.round_trips,
                )
            self._result = self.run.result()
        finally:
            self.connection.close()

    def finish(self) -> EdgeResult:
        """The whole result (after ``updates()`` is exhausted)."""
        if self._result is None:
            raise RuntimeError("the generation has not finished")
        return self._result

    def _drafted(self) -> str:
        """The local model's guesses past the emitted text, decoded (empty when there are none)."""
        ahead = [g.token for g in self.run.ahead]
        if not ahead:
            return ""
        tokenizer = self.runner.draft_model.tokenizer
        before = self.run.out[-DRAFT_CONTEXT:]
        return tokenizer.decode(before + ahead)[len(tokenizer.decode(before)) :]


class EdgeRunner:
    def __init__(self, config: EdgeLocalConfig, draft_model: Any) -> None:
        self.config = config
        self.draft_model = draft_model
        self._lock = threading.Lock()
        self._info: dict[str, Any] | None = None
        self._ask_again_at = 0.0

    def server_info(self) -> dict[str, Any] | None:
        """The server's ``/v1/edge/info`` (asked until it answers once), or None while unreachable.
        Raises ``EdgeRefused`` when the server refuses the key."""
        if self._info is None:
            if time.monotonic() < self._ask_again_at:
                return None
            try:
                with EdgeConnection(
                    self.config.server, self.config.key, TransportConfig(timeout_s=self.config.timeout_s)
                ) as connection:
                    self._info = connection.request("GET", "/v1/edge/info")
            except ServerUnavailable:
                self._ask_again_at = time.monotonic() + INFO_RETRY_S  # requests meanwhile do not wait for it
                return None
        return self._info

    def model_name(self) -> str:
        """The served model's name (the server's answer; the draft model's while it is unreachable)."""
        try:
            info = self.server_info()
        except EdgeRefused:
            info = None
        return str(info["model"]) if info else self.config.draft_model

    def max_length(self) -> int:
        """The longest context: the local model's, capped by the server's where known."""
        info = self._info
        local = int(self.draft_model.max_length)
        return min(local, int(info["max_length"])) if info else local

    def encode_chat(self, messages: Sequence[dict]) -> list[int]:
        return self.draft_model.encode_chat(messages)

    def encode(self, text: str) -> list[int]:
        return self.draft_model.encode(text)

    @property
    def vocab_size(self) -> int:
        return int(self.draft_model.vocab_size)

    def generate(self, prompt_ids: Sequence[int], generation: GenerationConfig) -> Iterator[Update | EdgeResult]:
        """The updates of one generation, then its ``EdgeResult``; waits for the generations
        before it (one at a time)."""
        with self._lock:
            run = Generation(self, prompt_ids, generation)
            yield from run.updates()
            yield run.finish()

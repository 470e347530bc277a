"""Prometheus metrics: ``GET /metrics`` (text format 0.0.4; the metrics and labels: docs/service.md).

Every app has its own ``CollectorRegistry`` (two apps in one process count apart). ``route`` is the
URL rule that matched ("unmatched" for a 404), never the raw path, so a client cannot grow the label
set. ``init_app`` adds the request hooks; ``observe(stream, drafter)`` wraps a completion or RAG
stream so that iterating it records its time to first token and, at its end, its ``Stats``;
``record_generation`` records a finished generation directly (grammar corrections).
"""

from __future__ import annotations

import time
from typing import Any, Callable, Iterator, TypeVar

from flask import Blueprint, Flask, Response, current_app, g, request
from prometheus_client import CONTENT_TYPE_PLAIN_0_0_4, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from specdraft import Stats
from specdraft.prefix_cache import PrefixCache, prefix_cache_for

EXTENSION = "specdraft.metrics"
UNMATCHED = "unmatched"  # the route label of a request no URL rule matched (a 404)
OVERLOAD_STATUS = 429
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
TTFT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
# Stats fields summed into counters: ``specdraft_<field>_total{route, drafter}``.
STATS_COUNTERS = (
    "prompt_tokens",
    "cached_prompt_tokens",
    "generated_tokens",
    "drafted_tokens",
    "accepted_tokens",
    "verify_steps",
    "target_forward_passes",
    "fallback_steps",
)

PREFIX_CACHE_GAUGES = ("bytes", "tokens", "entries", "max_bytes")  # ``PrefixCache.stats()`` facts
BATCHER_GAUGES = ("batched_passes", "batched_rows", "lone_passes")  # ``VerifyBatcher.stats()`` facts

bp = Blueprint("metrics", __name__)
S = TypeVar("S")


class ServiceMetrics:
    """One app's metrics and their registry (see the module docstring for the names)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "specdraft_requests", "HTTP requests answered", ("route", "method", "status"), registry=r
        )
        self.latency = Histogram(
            "specdraft_request_duration_seconds",
            "Time from a request's start until its response is closed",
            ("route",),
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.ttft = Histogram(
            "specdraft_time_to_first_token_seconds",
            "Time from a request's start until its first generated text",
            ("route",),
            buckets=TTFT_BUCKETS,
            registry=r,
        )
        self.generations = Counter("specdraft_generations", "Generations finished", ("route", "drafter"), registry=r)
        self.stats = {
            name: Counter(
                f"specdraft_{name}", f"Sum of Stats.{name} over finished generations", ("route", "drafter"), registry=r
            )
            for name in STATS_COUNTERS
        }
        self.rejected = Counter(
            "specdraft_rejected_requests", "Requests refused for load (429)", ("route", "reason"), registry=r
        )
        self.queued = Gauge("specdraft_queued_requests", "Requests waiting for a generation slot", registry=r)
        self.in_flight = Gauge("specdraft_generations_in_flight", "Generations running now", registry=r)
        self.prefix_cache: PrefixCache | None = None  # the served model's, set at each scrape
        self.batcher: Any = None  # the served model's VerifyBatcher, set at each scrape
        for fact in BATCHER_GAUGES:
            Gauge(
                f"specdraft_verify_batcher_{fact}", f"The served model's verify batcher: {fact}", registry=r
            ).set_function(lambda fact=fact: 0.0 if self.batcher is None else float(self.batcher.stats()[fact]))
        for fact in PREFIX_CACHE_GAUGES:
            Gauge(
                f"specdraft_prefix_cache_{fact}", f"The served model's prefix cache: {fact}", registry=r
            ).set_function(
                lambda fact=fact: 0.0 if self.prefix_cache is None else float(self.prefix_cache.stats()[fact])
            )

    def set_load_readers(
        self, queued: Callable[[], float] | None = None, in_flight: Callable[[], float] | None = None
    ) -> None:
        """Read the queue length and the generations in flight from these callables at each scrape."""
        if queued is not None:
            self.queued.set_function(queued)
        if in_flight is not None:
            self.in_flight.set_function(in_flight)

    def record_request(self, route: str, method: str, status: int) -> None:
        self.requests.labels(route, method, str(status)).inc()
        if status == OVERLOAD_STATUS:
            self.rejected.labels(route, "overload").inc()

    def record_generation(self, route: str, drafter: str, stats: Stats, ttft_s: float | None = None) -> None:
        """Count one finished generation: its ``Stats`` and (when given) its time to first token."""
        if ttft_s is not None:
            self.ttft.labels(route).observe(ttft_s)
        self.generations.labels(route, drafter).inc()
        for name, counter in self.stats.items():
            counter.labels(route, drafter).inc(getattr(stats, name))


def init_app(app: Flask) -> ServiceMetrics:
    """Give ``app`` its metrics and the hooks that count every request (register ``bp`` as well)."""
    metrics = ServiceMetrics()
    app.extensions[EXTENSION] = metrics
    app.before_request(_start_clock)
    app.after_request(_count_response)
    return metrics


def current_metrics() -> ServiceMetrics:
    """The metrics of the app handling the current request."""
    return current_app.extensions[EXTENSION]


def record_generation(drafter: str, stats: Stats, ttft_s: float | None = None) -> None:
    """Record a generation that finished while handling the current request (see ``ServiceMetrics``)."""
    current_metrics().record_generation(_route(), drafter, stats, ttft_s)


def observe(stream: S, drafter: str) -> S:
    """``stream`` (a ``GenerationStream`` or ``RAGStream``), recording as it is used: the time to its
    first piece of text (for the request's first stream only: with ``n`` choices, the others start
    later), then its ``Stats`` once it ends (iterated to the end, or ``stop()``). Call
    inside the request; the stream may be used after the handler returned (server-sent events).
    Other attributes (``hits``, ``result``, ``answer``) read through."""
    timed = not g.get("metrics_observed", False)
    g.metrics_observed = True
    return _Observed(stream, drafter, current_metrics(), _route(), _request_start(), timed)  # type: ignore[return-value]


class _Observed:
    def __init__(
        self, stream: Any, drafter: str, metrics: ServiceMetrics, route: str, start: float, timed: bool
    ) -> None:
        self._stream = stream
        self._drafter, self._metrics, self._route, self._start = drafter, metrics, route, start
        self._first_seen, self._recorded = not timed, False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def __iter__(self) -> Iterator[Any]:
        for piece in self._stream:
            self._first_token()
            yield piece
        self._record(self._outcome())

    def stop(self) -> Any:
        """As the stream's own: end it now and return what it produced."""
        outcome = self._stream.stop()
        self._record(outcome)
        return outcome

    def _outcome(self) -> Any:
        answer = getattr(self._stream, "answer", None)  # a RAGStream's
        return answer if answer is not None else self._stream.result

    def _first_token(self) -> None:
        if not self._first_seen:
            self._first_seen = True
            self._metrics.ttft.labels(self._route).observe(time.perf_counter() - self._start)

    def _record(self, outcome: Any) -> None:
        if self._recorded:
            return
        self._recorded = True
        if outcome.stats.generated_tokens:  # tokens but no text yet (held back for a stop string): now
            self._first_token()
        self._metrics.record_generation(self._route, self._drafter, outcome.stats)


@bp.get("/metrics")
def metrics() -> Response:
    """The app's metrics in Prometheus' text format."""
    from .state import current_state

    state, found = current_state(), current_metrics()
    found.prefix_cache = prefix_cache_for(state.target()) if state.loaded else None
    found.batcher = state.verify_batcher
    return Response(generate_latest(found.registry), content_type=CONTENT_TYPE_PLAIN_0_0_4)


def _route() -> str:
    rule = request.url_rule
    return rule.rule if rule is not None else UNMATCHED


def _request_start() -> float:
    return g.get("metrics_start", time.perf_counter())


def _start_clock() -> None:
    g.metrics_start = time.perf_counter()


def _count_response(response: Response) -> Response:
    metrics, route, start = current_metrics(), _route(), _request_start()
    metrics.record_request(route, request.method, response.status_code)
    response.call_on_close(lambda: metrics.latency.labels(route).observe(time.perf_counter() - start))
    return response

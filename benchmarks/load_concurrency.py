"""Throughput under concurrency: the load test's request mix at 1, 4, 16 ... concurrent clients.

``python benchmarks/load.py --concurrency 1,4,16 --limit 24`` (``load.main`` hands over
to ``sweep`` when ``--concurrency`` is given; the server is started or targeted as for the load test).

Contract:

- **Expected answers**: every distinct request of ``load_requests`` is sent alone once per mode
  first (``load_client.sequential_pass``); every answer under load is compared with it (greedy, so it must
  be identical token for token).
- **Points**: for each level ``n`` of ``levels`` and each mode, ``n`` client threads send requests
  (each in its own seeded order) until exactly ``limit`` requests were sent (no time limit: each
  point is bounded by its count). The mode order alternates between levels (A B, B A, ...) so that
  drift of the machine's other load falls on both modes alike.
- **Per point**: ``requests_per_s`` = answered (200) requests / the point's wall seconds (first
  request sent to last answer received); latency ``p50_s``/``p90_s`` (nearest rank) of the answered
  requests, as the client saw them (queueing at the server's generation gate included);
  ``generated_tokens_per_s``; errors by status (429 apart); ``identical`` / ``compared``.
- **Files** (``write``): ``concurrency.json``, ``concurrency.md`` (the table), ``concurrency.png``
  (requests/s and p50 latency against clients, one line per mode).
- **Several servers** (``sweep_servers``, ``load --compare-batch-verify``): each server (a label, such
  as "alone" and "batched") gets its own documents and sequential pass, and every point runs on every
  server in turn, the server order alternating from point to point like the modes; each point names
  its ``server``. The report also says whether the servers' sequential answers were the same.
"""

from __future__ import annotations

import os
import secrets
import time
from collections import Counter
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from benchmarks.load_client import (
    OVERLOADED,
    Client,
    Outcome,
    RequestBudget,
    add_documents,
    run_clients,
    sequential_pass,
)
from benchmarks.load_requests import MODES, PLAIN, SPECULATIVE, load_requests
from specdraft.apps.bench.datasets.archive_cache import say
from specdraft.apps.bench.result_files import markdown_table, write_results

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MAX_LEVEL, MAX_LIMIT = 64, 10_000


@dataclass(frozen=True)
class ConcurrencyConfig:
    """``levels``: concurrent clients per point; ``limit``: requests per point (and mode);
    ``modes``: plain and/or speculative; chat and RAG answers of up to ``max_tokens`` tokens."""

    levels: tuple[int, ...] = (1, 4, 16)
    limit: int = 24
    modes: tuple[str, ...] = MODES
    max_tokens: int = 32
    seed: int = 0

    def __post_init__(self) -> None:
        if (
            not self.levels
            or any(not 1 <= n <= MAX_LEVEL for n in self.levels)
            or len(set(self.levels)) != len(self.levels)
        ):
            raise ValueError(f"concurrency levels must be distinct numbers 1..{MAX_LEVEL}, got {self.levels}")
        if not 1 <= self.limit <= MAX_LIMIT:
            raise ValueError(f"limit must be 1..{MAX_LIMIT} requests per point, got {self.limit}")
        if not self.modes or len(set(self.modes)) != len(self.modes) or not set(self.modes) <= set(MODES):
            raise ValueError(f"modes must be distinct names of {', '.join(MODES)}, got {self.modes}")
        if not 1 <= self.max_tokens <= 512:
            raise ValueError(f"max_tokens must be 1..512, got {self.max_tokens}")

    def points(self) -> list[tuple[int, str]]:
        """``(clients, mode)`` in run order: the modes alternate their order from level to level."""
        order = []
        for number, level in enumerate(self.levels):
            modes = self.modes if number % 2 == 0 else tuple(reversed(self.modes))
            order += [(level, mode) for mode in modes]
        return order


def parse_levels(text: str) -> tuple[int, ...]:
    """``"1,4,16"`` -> ``(1, 4, 16)``; anything else is a ``ValueError`` naming the flag."""
    try:
        levels = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise ValueError(f"--concurrency must be numbers separated by commas such as 1,4,16, got {text!r}") from None
    if not levels:
        raise ValueError("--concurrency needs at least one number of clients")
    return levels


def point_summary(outcomes: Sequence[Outcome], clients: int, mode: str, seconds: float) -> dict[str, Any]:
    """One point's figures (the module docstring's words)."""
    from benchmarks.load_report import percentile

    answered = [o for o in outcomes if o.status == 200]
    latencies = [o.latency_s for o in answered]
    errors = Counter(str(o.status) for o in outcomes if o.status not in (200, OVERLOADED))
    tokens = sum(o.stats.get("generated_tokens", 0) for o in answered)
    return {
        "clients": clients,
        "mode": mode,
        "requests": len(outcomes),
        "answered": len(answered),
        "seconds": round(seconds, 3),
        "requests_per_s": round(len(answered) / seconds, 4) if seconds > 0 else 0.0,
        "generated_tokens_per_s": round(tokens / seconds, 2) if seconds > 0 else 0.0,
        "p50_s": round(percentile(latencies, 50), 4),
        "p90_s": round(percentile(latencies, 90), 4),
        "overloaded_429": sum(o.status == OVERLOADED for o in outcomes),
        "errors": dict(errors),
        "identical": sum(o.identical is True for o in answered),
        "compared": sum(o.identical is not None for o in answered),
    }


def sweep(config: ConcurrencyConfig, client: Client, server: str, name: str | None = None) -> dict[str, Any]:
    """Run every point of ``config`` against ``client``'s server; the report (see ``write``)."""
    return sweep_servers(config, [("", client, server)], name)


def sweep_servers(
    config: ConcurrencyConfig, servers: Sequence[tuple[str, Client, str]], name: str | None = None
) -> dict[str, Any]:
    """``sweep`` over one or more ``(label, client, description)`` servers serving the same model."""
    from specdraft.apps.bench.runner import environment

    models = set()
    for _label, client, _ in servers:
        health = client.get("/healthz")
        if health.status != 200:
            raise RuntimeError(f"{client.base_url}/healthz answered HTTP {health.status}: is it specdraft serve?")
        models.add(health.body["model"])
    if len(models) != 1:
        raise RuntimeError(f"the servers serve different models: {sorted(models)}")
    model = models.pop()
    zero = time.perf_counter()
    clock = lambda: time.perf_counter() - zero  # noqa: E731
    load_before = os.getloadavg()
    index = f"concurrency-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"
    requests = load_requests(config.max_tokens, index)
    expected, plain_alone = {}, []
    for label, client, _ in servers:
        add_documents(client, index)
        expected[label], alone = sequential_pass(client, requests, config.modes, clock)
        plain_alone += [o for o in alone if o.mode == PLAIN]
    points = []
    for number, (clients, mode) in enumerate(config.points()):
        order = servers if number % 2 == 0 else list(reversed(servers))
        for label, client, _ in order:
            budget = RequestBudget(config.limit)
            start = clock()
            found = run_clients(
                client, requests, mode, clients, float("inf"), budget, expected[label], config.seed + number, clock
            )
            seconds = max((o.start_s + o.latency_s for o in found), default=start) - start
            points.append({**point_summary(found, clients, mode, seconds), **({"server": label} if label else {})})
            say(
                f"{clients} clients, {mode}{' ' + label if label else ''}: {points[-1]['requests_per_s']} requests/s, "
                f"p50 {points[-1]['p50_s']} s, p90 {points[-1]['p90_s']} s, identical "
                f"{points[-1]['identical']}/{points[-1]['compared']}"
            )
    env = {**environment(), "cpu_count": os.cpu_count(), "load_before": load_before, "load_after": os.getloadavg()}
    report = {
        "name": name or Path(model).name,
        "model": model,
        "server": " / ".join(f"{label + ': ' if label else ''}{description}" for label, _, description in servers),
        "config": asdict(config),
        "environment": env,
        "sequential": {
            "requests": len(requests),
            "plain_identical": sum(o.identical is True for o in plain_alone),
            "plain_compared": len(plain_alone),
        },
        "points": points,
        "goals": {
            "no_errors_but_429": not any(p["errors"] for p in points),
            "identical_to_sequential": all(p["identical"] == p["compared"] == p["answered"] for p in points)
            and all(o.identical is True for o in plain_alone),
        },
    }
    if len(servers) > 1:
        report["servers"] = [label for label, _, _ in servers]
        report["sequential"]["same_on_every_server"] = all(
            expected[label] == expected[servers[0][0]] for label, _, _ in servers
        )
    return report


def markdown(report: dict[str, Any]) -> str:
    """The report as Markdown: one table row per point, and a speed-up column per level."""
    by = {(p["clients"], p["mode"], p.get("server", "")): p for p in report["points"]}
    several = len(report.get("servers", ())) > 1
    rows = []
    for p in sorted(report["points"], key=lambda p: (p["clients"], p["mode"], p.get("server", ""))):
        plain = by.get((p["clients"], PLAIN, p.get("server", "")))
        speedup = (
            f"{p['requests_per_s'] / plain['requests_per_s']:.2f}x"
            if plain and plain["requests_per_s"] and p["mode"] == SPECULATIVE
            else ""
        )
        rows.append(
            [
                p["clients"],
                p["mode"],
                *([p.get("server", "")] if several else []),
                f"{p['answered']}/{p['requests']}",
                f"{p['requests_per_s']:.3f}",
                speedup,
                f"{p['generated_tokens_per_s']:.1f}",
                f"{p['p50_s']:.2f}",
                f"{p['p90_s']:.2f}",
                p["overloaded_429"],
                f"{p['identical']}/{p['compared']}",
            ]
        )
    env = report["environment"]
    config = report["config"]
    lines = [
        f"# Throughput under concurrency: {report['name']}",
        "",
        f"Server: `{report['server']}`. {config['limit']} requests per point (the load test's chat, grammar and RAG "
        f"mix, greedy, max_tokens {config['max_tokens']}), {env['cpu_count']} CPUs, load average "
        f"{env['load_before'][0]:.1f} before and {env['load_after'][0]:.1f} after. Latency: the client's wall time, "
        "queueing included.",
        "",
        markdown_table(
            [
                "clients",
                "mode",
                *(["server"] if several else []),
                "answered",
                "requests/s",
                "spec / plain",
                "tokens/s",
                "p50 s",
                "p90 s",
                "429",
                "identical",
            ],
            rows,
        ).rstrip("\n"),
        "",
        f"Goals: {', '.join(f'{k}: {v}' for k, v in report['goals'].items())}.",
    ]
    return "\n".join(lines) + "\n"


def draw(report: dict[str, Any], fig: Figure) -> None:
    """Requests/s (left) and p50/p90 latency (right) against the number of concurrent clients."""
    fig.set_size_inches(10, 4)
    left, right = fig.subplots(1, 2)
    for mode, server in [(m, s) for m in report["config"]["modes"] for s in report.get("servers", [""])]:
        points = sorted(
            (p for p in report["points"] if p["mode"] == mode and p.get("server", "") == server),
            key=lambda p: p["clients"],
        )
        xs = [p["clients"] for p in points]
        label = f"{mode} {server}".strip()
        left.plot(xs, [p["requests_per_s"] for p in points], marker="o", label=label)
        right.plot(xs, [p["p50_s"] for p in points], marker="o", label=f"{label} p50")
        right.plot(xs, [p["p90_s"] for p in points], marker="x", linestyle="--", label=f"{label} p90")
    for axis, title in ((left, "requests/s"), (right, "latency (s)")):
        axis.set_xscale("log", base=2)
        axis.set_xlabel("concurrent clients")
        axis.set_title(f"{report['name']}: {title}")
        axis.legend(loc="best")
        axis.grid(alpha=0.3)


def write(report: dict[str, Any], out: Path) -> list[Path]:
    """``concurrency.json``, ``concurrency.md`` and ``concurrency.png`` in ``out`` (``result_files.write_results``)."""
    return list(write_results(out, report, markdown(report), partial(draw, report), stem="concurrency").values())

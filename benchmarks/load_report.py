"""The load test's summaries and files: ``load.json``, ``load.md``, ``load.png`` and, for plain vs
speculative decoding under the same load, the benchmark's own ``results.*`` (``report.write_report``).

Words used throughout:

- **latency**: the client's wall time of one request, queueing at the server's generation gate
  included (what a user waits under that load); ``p50``/``p99`` are nearest-rank percentiles.
- **throughput**: answered (200) requests, and their generated tokens, per second of the mode's
  load segments.
- **errors**: answers other than 200, by status; 429 (the server's deliberate "busy") is counted
  apart from the rest; status 0 is a request that got no HTTP answer.
- **identical**: a 200 whose greedy answer equals the same request's answer sent alone.
- **ratios** (per distinct request, plain over speculative, both under load; above 1: speculation
  did better): ``latency``, of the median latencies; ``generation``, of the median generation
  times the server reports (``stats.wall_s``: the request's own work, without the wait for a place
  at the gate, which depends on what else was running); ``passes``, of the median target passes.
- **memory**: the server process's resident set size (RSS) over the run; ``growth`` is the last
  sample minus the first one of the load; ``late_slope`` the least-squares slope over the second
  half of the load, in MB per minute (leaks keep growing after the warm-up; caches do not).
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from benchmarks.http_rag import HttpMeasurement
from benchmarks.load_client import OVERLOADED, Outcome
from benchmarks.load_requests import KINDS, MODES, PLAIN, SPECULATIVE
from specdraft.apps.bench.report import markdown_table, write_report
from specdraft.apps.bench.result_files import write_results
from specdraft.apps.bench.runner import BenchResult, summarize

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MB = 1024 * 1024
METHOD_NAMES = {PLAIN: "plain (drafter none) under load", SPECULATIVE: "speculative (server defaults) under load"}


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile ``q`` (0..100) of ``values`` (0.0 when empty)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def latency_summary(latencies: Sequence[float]) -> dict[str, float]:
    return {
        "count": len(latencies),
        "p50_s": round(percentile(latencies, 50), 4),
        "p99_s": round(percentile(latencies, 99), 4),
        "mean_s": round(statistics.fmean(latencies), 4) if latencies else 0.0,
        "max_s": round(max(latencies), 4) if latencies else 0.0,
    }


def mode_summary(outcomes: Sequence[Outcome], seconds: float) -> dict[str, Any]:
    """Throughput, latency per kind, errors and identity of one mode's outcomes over ``seconds``."""
    ok = [o for o in outcomes if o.status == 200]
    statuses = Counter(o.status for o in outcomes if o.status != 200)
    tokens = sum(o.stats.get("generated_tokens", 0) for o in ok)
    return {
        "requests": len(outcomes),
        "answered": len(ok),
        "seconds": round(seconds, 3),
        "requests_per_s": round(len(ok) / seconds, 4) if seconds else 0.0,
        "tokens_per_s": round(tokens / seconds, 3) if seconds else 0.0,
        "generated_tokens": tokens,
        "latency": {kind: latency_summary([o.latency_s for o in ok if o.kind == kind]) for kind in KINDS},
        "overloaded_429": statuses.pop(OVERLOADED, 0),
        "errors": {str(status): count for status, count in sorted(statuses.items())},
        "error_examples": sorted(
            {f"{o.status} {o.request}: {o.error}" for o in outcomes if o.status not in (200, OVERLOADED)}
        )[:10],
        "identical": sum(o.identical is True for o in ok),
        "compared": sum(o.identical is not None for o in ok),
    }


def memory_summary(samples: Sequence[tuple[float, int]], load_start_s: float) -> dict[str, Any]:
    """RSS facts of the samples taken from ``load_start_s`` on (see the module docstring)."""
    load = [(t, rss) for t, rss in samples if t >= load_start_s]
    if not load:
        return {"samples": len(samples), "note": "no memory samples (the server's process is unknown)"}
    late = load[len(load) // 2 :]
    return {
        "samples": len(samples),
        "start_mb": round(load[0][1] / MB, 1),
        "end_mb": round(load[-1][1] / MB, 1),
        "peak_mb": round(max(rss for _, rss in load) / MB, 1),
        "growth_mb": round((load[-1][1] - load[0][1]) / MB, 1),
        "late_slope_mb_per_min": round(_slope(late) * 60 / MB, 2),
    }


def _slope(points: Sequence[tuple[float, int]]) -> float:
    if len(points) < 2:
        return 0.0
    mean_t = statistics.fmean(t for t, _ in points)
    mean_y = statistics.fmean(y for _, y in points)
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    return sum((t - mean_t) * (y - mean_y) for t, y in points) / spread if spread else 0.0


def comparison(outcomes: Sequence[Outcome], model: str, max_tokens: int, environment: dict) -> BenchResult | None:
    """Plain vs speculative under load as a ``BenchResult`` (plain first: the baseline): one
    measurement per mode and distinct request, its median latency and stats; None unless both
    modes answered some request."""
    ok = [o for o in outcomes if o.status == 200]
    requests = sorted({o.request for o in ok if o.mode == PLAIN} & {o.request for o in ok if o.mode == SPECULATIVE})
    if not requests:
        return None
    measurements = []
    for mode in (PLAIN, SPECULATIVE):
        for request in requests:
            rows = [o for o in ok if o.mode == mode and o.request == request]
            median = lambda name: statistics.median(o.stats.get(name, 0) for o in rows)  # noqa: E731
            measurements.append(
                HttpMeasurement(
                    method=METHOD_NAMES[mode],
                    prompt_id=request,
                    token_ids=[],
                    wall_s=statistics.median(o.latency_s for o in rows),
                    forward_passes=round(median("target_forward_passes")),
                    mean_accepted_tokens=median("mean_accepted_tokens"),
                    first_token_s=median("prefill_s"),
                    identical=all(o.identical for o in rows),
                    completion_tokens=round(median("generated_tokens")),
                )
            )
    names = [METHOD_NAMES[PLAIN], METHOD_NAMES[SPECULATIVE]]
    return BenchResult(
        "load: plain vs speculative",
        model,
        max_tokens,
        len(requests),
        environment,
        summarize(names, measurements),
        measurements,
    )


RATIO_OF = {  # what the ratios compare (see the module docstring)
    "latency": lambda o: o.latency_s,
    "generation": lambda o: o.stats.get("wall_s", 0.0),
    "passes": lambda o: o.stats.get("target_forward_passes", 0),
}


def ratios(outcomes: Sequence[Outcome]) -> dict[str, dict[str, float]]:
    """``{"latency"|"generation"|"passes": {request: plain median / speculative median}}`` over the
    requests answered in both modes."""
    ok = [o for o in outcomes if o.status == 200]
    found: dict[str, dict[str, float]] = {}
    for name, value in RATIO_OF.items():
        medians = {mode: {} for mode in (PLAIN, SPECULATIVE)}
        for mode in medians:
            for request in {o.request for o in ok if o.mode == mode}:
                medians[mode][request] = statistics.median(
                    value(o) for o in ok if o.mode == mode and o.request == request
                )
        both = sorted(set(medians[PLAIN]) & set(medians[SPECULATIVE]))
        found[name] = {
            r: round(medians[PLAIN][r] / medians[SPECULATIVE][r], 4) for r in both if medians[SPECULATIVE][r] > 0
        }
    return found


def ratio_summary(by_request: dict[str, float]) -> dict[str, Any]:
    values = list(by_request.values())
    by_kind = {kind: [v for r, v in by_request.items() if r.startswith(kind + "-")] for kind in KINDS}
    return {
        "min": min(values),
        "p10": percentile(values, 10),
        "median": round(statistics.median(values), 4),
        "max": max(values),
        "below_1": sum(v < 1 for v in values),
        "requests": len(values),
        "median_by_kind": {kind: round(statistics.median(v), 4) for kind, v in by_kind.items() if v},
    }


def markdown(report: dict[str, Any], result: BenchResult | None) -> str:
    cfg, env = report["config"], report["environment"]
    lines = [
        f"# Load test {report['name']}: {report['model']}",
        "",
        f"{cfg['clients']} concurrent clients, {sum(s['end_s'] - s['start_s'] for s in report['segments']):.0f} s of "
        f"load in segments of {cfg['duration_s'] / max(1, len(report['segments'])):.0f} s each plus the requests "
        f"still running at their end ({', '.join(report['segments_order'])}), greedy, up to {cfg['max_tokens']} "
        f"tokens per chat/RAG answer; server `{report['server']}`. {env['cpu_count']} CPU cores shared with other "
        f"processes: load average {env['load_before'][0]:.2f} when the run began, {env['load_after'][0]:.2f} when it "
        f"ended; {env['time']}.",
        "",
        f"Sequential pass (each distinct request alone, both modes): {report['sequential']['plain_identical']} of "
        f"{report['sequential']['requests']} plain answers identical to the speculative ones."
        if PLAIN in cfg["modes"]
        else f"Sequential pass: each of the {report['sequential']['requests']} distinct requests alone, once.",
        "",
        "| mode | kind | answered | p50 latency | p99 latency | mean |",
        "|---|---|---|---|---|---|",
    ]
    for mode, summary in report["load"].items():
        for kind, lat in summary["latency"].items():
            lines.append(
                f"| {mode} | {kind} | {lat['count']} | {lat['p50_s']:.2f} s | {lat['p99_s']:.2f} s | "
                f"{lat['mean_s']:.2f} s |"
            )
    lines += [
        "",
        "| mode | requests | answered | requests/s | tokens/s | 429 (deliberate) | other errors | identical to "
        "sequential |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for mode, s in report["load"].items():
        errors = ", ".join(f"{status}: {count}" for status, count in s["errors"].items()) or "0"
        lines.append(
            f"| {mode} | {s['requests']} | {s['answered']} | {s['requests_per_s']:.3f} | {s['tokens_per_s']:.1f} | "
            f"{s['overloaded_429']} | {errors} | {s['identical']}/{s['compared']} |"
        )
    memory = report["memory"]
    lines += [
        "",
        "Server memory (RSS): "
        + (
            f"{memory['start_mb']} MB at the start of the load, {memory['end_mb']} MB at the end, peak "
            f"{memory['peak_mb']} MB; growth {memory['growth_mb']:+} MB, slope over the second half "
            f"{memory['late_slope_mb_per_min']:+} MB/min."
            if "start_mb" in memory
            else memory["note"]
        ),
        "",
    ]
    if result is not None:
        lines.append(
            "Plain vs speculative under the same load, per distinct request (plain / speculative; above 1: "
            "speculation did better):"
        )
        lines.append("")
        lines += [
            "| ratio of the medians | min | p10 | median | max | requests below 1 | median by kind |",
            "|---|---|---|---|---|---|---|",
        ]
        for name, r in report["comparison"].items():
            kinds = ", ".join(f"{kind} {value:.2f}" for kind, value in r["median_by_kind"].items())
            lines.append(
                f"| {name} | {r['min']:.2f} | {r['p10']:.2f} | {r['median']:.2f} | {r['max']:.2f} | {r['below_1']} of "
                f"{r['requests']} | {kinds} |"
            )
        lines += [
            "",
            markdown_table(result).replace("# ", "## ", 1),
        ]
    return "\n".join(lines) + "\n"


def draw(report: dict[str, Any], outcomes: Sequence[Outcome], fig: Figure) -> None:
    """Latency per kind and mode (box plots), the server's memory over time and, with both modes, the
    per-request ratios plain / speculative."""
    found = report.get("ratios", {})  # none with one mode: no third panel
    fig.set_size_inches(16 if found else 11, 4.5)
    axes = fig.subplots(1, 3 if found else 2)
    ax_lat, ax_mem = axes[:2]
    labels, data = [], []
    for kind in KINDS:
        for mode in MODES:
            values = [o.latency_s for o in outcomes if o.status == 200 and o.kind == kind and o.mode == mode]
            if values:
                labels.append(f"{kind}\n{mode}")
                data.append(values)
    if data:
        ax_lat.boxplot(data, whis=(1, 99), showfliers=True)
        ax_lat.set_xticks(range(1, len(labels) + 1), labels, fontsize=8)
    ax_lat.set_ylabel("latency under load, s (whiskers: p1..p99)")
    samples = report["memory_samples"]
    if samples:
        ax_mem.plot([t for t, _ in samples], [rss / MB for _, rss in samples], color="#4C72B0")
    for segment in report["segments"]:
        ax_mem.axvspan(
            segment["start_s"],
            segment["end_s"],
            color="#55A868" if segment["mode"] == SPECULATIVE else "#C44E52",
            alpha=0.12,
        )
    ax_mem.set_xlabel("s since the start (shaded: load, green speculative, red plain)")
    ax_mem.set_ylabel("server RSS, MB")
    if found:
        ax_ratio = axes[2]
        for name, color in (("latency", "#4C72B0"), ("generation", "#55A868")):
            values = list(found[name].values())
            ax_ratio.hist(values, bins=min(20, max(5, len(values))), color=color, alpha=0.6, label=name)
        ax_ratio.axvline(1.0, color="grey", linestyle="--")
        ax_ratio.legend()
        ax_ratio.set_xlabel("per request: plain / speculative (> 1: speculation faster)")
    fig.suptitle(f"load test {report['name']}: {report['model']}, {report['config']['clients']} clients")


def write(report: dict[str, Any], outcomes: Sequence[Outcome], result: BenchResult | None, out: Path) -> list[Path]:
    """``load.json`` (everything, every outcome), ``load.md``, ``load.png``, and ``results.*`` of the
    comparison (``report.write_report``), all through ``result_files.write_results``."""
    payload = {**report, "outcomes": [o.__dict__ for o in outcomes]}
    paths = list(
        write_results(out, payload, markdown(report, result), partial(draw, report, outcomes), stem="load").values()
    )
    if result is not None:
        paths += list(write_report(result, out).values())
    return paths

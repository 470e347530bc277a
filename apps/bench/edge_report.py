"""The edge benchmark's report (``EdgeBenchResult``): ``results.json`` (every measurement), ``results.md``
(one table row per set x delay x method) and ``results.png`` (tokens/s at the client against the added
round trip), written through ``result_files.write_results``."""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from .edge_bench import EdgeBenchResult
from .edge_methods import EDGE_VARIANTS
from .result_files import write_results

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def markdown(result: EdgeBenchResult) -> str:
    c, env = result.config, result.environment
    lines = [
        f"# edge on {c['server_model']} ({c['server_backend']}, {c['server_dtype']}, {c['server_device']}) verifying "
        f"{c['draft_model']} ({c['draft_backend']}) drafts",
        "",
        f"Server (`specdraft serve --edge`) and client in separate processes on one machine ({env['processor']}, "
        f"{os.cpu_count()} CPU cores shared by both), a TCP proxy adding {', '.join(str(d) for d in c['delays_ms'])} "
        f"ms round trip; {c['limit']} prompts per set ({', '.join(c['sets'])}), up to {c['max_new_tokens']} new "
        f"tokens, greedy; {env['time']}. tokens/s at the client, prefill included. Server passes/token: the server's "
        "forward passes per generated token. Identical: text equal to the server-only greedy text. local-only runs "
        "without the network (delay -). Overlap: the share of the wall time the client drafted while a verification "
        "was in flight; overlap tokens: tokens drafted then that became verified output.",
        "",
        "| set | delay (ms) | method | tokens/s | server passes / token | verified / round trip | round trips | "
        "unverified tokens | identical | overlap | overlap tokens |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(result.rows, key=lambda r: (r["set"], r["delay_ms"], r["method"] != "server-only", r["method"])):
        vpr = "-" if r["verified_per_round_trip"] is None else str(r["verified_per_round_trip"])
        lines.append(
            f"| {r['set']} | {'-' if r['delay_ms'] < 0 else r['delay_ms']} | {r['method']} | {r['tokens_per_s']} | "
            f"{r['server_passes_per_token']} | {vpr} | {r['round_trips']} | {r['unverified_tokens']} | "
            f"{r['identical_rate']:.0%} | {r.get('overlap_share', 0.0):.0%} | {r.get('overlap_emitted_tokens', 0)} |"
        )
    return "\n".join(lines) + "\n"


def draw(result: EdgeBenchResult, fig: Figure) -> None:
    """Tokens/s at the client against the added round trip, one panel per prompt set."""
    sets = sorted({r["set"] for r in result.rows})
    fig.set_size_inches(6 * len(sets), 4.5)
    axes = fig.subplots(1, len(sets), squeeze=False)
    delays = sorted(d for d in {r["delay_ms"] for r in result.rows} if d >= 0)
    for ax, name in zip(axes[0], sets):
        rows = [r for r in result.rows if r["set"] == name]
        for method in ["server-only", *EDGE_VARIANTS]:
            points = sorted((r["delay_ms"], r["tokens_per_s"]) for r in rows if r["method"] == method)
            if points:
                ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=method)
        local = [r["tokens_per_s"] for r in rows if r["method"] == "local-only"]
        if local:
            ax.axhline(local[0], color="grey", linestyle="--", label="local-only (no network)")
        ax.set_xticks(delays)
        ax.set_xlabel("added round trip (ms)")
        ax.set_ylabel("tokens/s at the client")
        ax.set_title(name)
        ax.legend(fontsize=8)
    c = result.config
    fig.suptitle(
        f"edge: {c['server_model']} ({c['server_backend']}) server, {c['draft_model']} ({c['draft_backend']}) client"
    )


def write_edge_report(result: EdgeBenchResult, out_dir: Path) -> dict[str, Path]:
    """results.json, results.md and results.png in ``out_dir`` (``result_files.write_results``)."""
    return write_results(out_dir, result.to_dict(), markdown(result), partial(draw, result))

"""The GPU run's result folders (``scripts/gpu_run.py``), in the shape of ``docs/bench`` folders.

Call 1 writes ``call1.json`` and ``call1.md``. Call 2 writes ``results.json`` (everything, call 1's
report included when it is still on the machine), ``results.md`` (the tables below),
``<task>.png`` per speed-up task (the benchmark runner's plot, ``specdraft.apps.bench.report.plot``)
and ``pass_cost.png``: at most 7 files in one folder, within what a device call sends back.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

SPEED_TASKS = ("grammar", "rag", "chat")  # the tasks whose speed-ups are plotted (draft-model: exactness only)


def write_json(path: Path, report: dict) -> None:
    """``report`` as indented JSON, written whole (a run cut short keeps its last complete report)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(report, indent=2, default=str) + "\n")
    tmp.replace(path)


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _share(value: float) -> str:
    return f"{value:.0%}"


def call1_markdown(report: dict) -> list[str]:
    """Call 1's tables: ``scripts/cuda_check.py``'s three sections and the fast path on the same shape."""
    checks = report.get("cuda_check") or {}
    lines = [f"## Call 1: random weights on {report['run']['device_name']}", ""]
    if checks.get("lossless"):
        lines += [
            "Lossless (small random Llama; cases identical to plain / cases):",
            "",
            "| dtype | drafter | identical |",
            "|---|---|---|",
        ]
        for dtype, trials in checks["lossless"].items():
            names = [key for key in trials[0] if key != "trial"]
            for name in names:
                same = sum(bool(row[name]["identical"] if isinstance(row[name], dict) else row[name]) for row in trials)
                lines.append(f"| {dtype} | {name} | {same}/{len(trials)} |")
        lines.append("")
    for dtype, sweep in checks.get("pass_ms_by_width", {}).items():
        widths = list(sweep["ms"])
        lines += [
            f"Eager pass cost, {dtype}, {sweep['layers']} layers x {sweep['hidden']}, context {sweep['context']} "
            "(median ms):",
            "",
            "| width | " + " | ".join(map(str, widths)) + " |",
            "|---" * (len(widths) + 1) + "|",
            "| ms | " + " | ".join(f"{sweep['ms'][w]:.2f}" for w in widths) + " |",
            "",
        ]
    if checks.get("ideal_acceptance_float32"):
        lines += [
            "Ideal acceptance (float32; the drafter holds plain's output):",
            "",
            "| run | wall s | passes | speed-up | identical |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {name} | {run['wall_s']} | {run['passes']} | {run['speedup']}x | {run['identical']} |"
            for name, run in checks["ideal_acceptance_float32"].items()
        ]
        lines.append("")
    if report.get("fast_path_random"):
        lines += pass_cost_markdown(report["fast_path_random"], "Fast path vs eager, same random shape (float32)")
    return lines + problems_markdown(report)


def problems_markdown(report: dict) -> list[str]:
    """The sections a call skipped for time or that failed (each failure's last traceback line)."""
    lines = []
    if report.get("skipped_for_time"):
        lines += [f"Skipped for time: {', '.join(report['skipped_for_time'])}.", ""]
    for section, error in (report.get("errors") or {}).items():
        lines += [f"**{section} failed**: `{error.strip().splitlines()[-1]}` (traceback in the JSON).", ""]
    return lines


def pass_cost_markdown(sweep: dict, title: str) -> list[str]:
    """A pass-cost sweep (``measure.pass_cost``'s keys, or the same from call 1) as a table."""
    graphs = "CUDA graphs" if sweep.get("fast_graphs") else "eager (no CUDA graphs)"
    lines = [
        f"{title}: context {sweep['context']}, median of {sweep['reps']} passes, fast path {graphs}.",
        "",
        "| width | eager ms | fast ms | eager / fast | max abs logit diff |",
        "|---|---|---|---|---|",
    ]
    for width, eager in sweep["eager_ms"].items():
        lines.append(
            f"| {width} | {eager:.2f} | {sweep['fast_ms'][width]:.2f} | {sweep['eager_over_fast'][width]:.2f}x | "
            f"{sweep['max_abs_logit_diff'][width]:.1e} |"
        )
    return lines + ["", f"Same argmax on every row: {sweep['same_argmax']}.", ""]


def markdown(report: dict) -> str:
    """Call 2's ``results.md``: environment, (a) exactness, (b) pass cost, (c) speed-ups, then call 1's."""
    run, model = report["run"], report["model"]
    lines = [
        f"# GPU run: {model['name']} (trained weights, float32) on {run['device_name']}",
        "",
        f"`{run['command']}`; torch {run['torch']}, transformers {run['transformers']}, Python {run['python']}; "
        f"{run['time']}. Model: `{model['gguf_file']}` (sha256 `{model['sha256'][:16]}...`, checked), dequantized by "
        f"transformers in {model['load_s']:.0f} s (from the {model.get('loaded_from', 'gguf')}). "
        "Paths: `eager` = the transformers backend, `fast` = the fast path (static KV, CUDA graphs), "
        "`transformers` = transformers' own `generate` on the same weights."
        + (" **Dry run** (CPU, tiny budgets): the numbers only show that every step runs." if run["dry_run"] else ""),
        "",
        "## (a) Exactness",
        "",
        "Lossless (every specdraft method identical to plain decoding on its path and to transformers' generate, "
        f"every case): **{report['exactness']['lossless']}**. Fast path with reference trees after a random "
        f"{report['budget']['context']}-token prompt: `{json.dumps(report.get('fast_trees', {}))}`.",
        "",
        "| task | method | cases | identical to plain on its path | identical to transformers generate |",
        "|---|---|---|---|---|",
    ]
    for task, found in report["tasks"].items():
        for method, row in found["exactness"]["methods"].items():
            lines.append(
                f"| {task} | {method} | {row['cases']} | {_share(row['same_path'])} | {_share(row['generate'])} |"
            )
    lines += ["", "## (b) Verify-pass cost by width", ""]
    if report.get("pass_cost"):
        lines += pass_cost_markdown(report["pass_cost"], f"{model['name']}, float32")
    lines += [
        "## (c) Speed-ups",
        "",
        "Wall time over all cases, prefill included, greedy, the same stop rule (EOS or the token limit) for every "
        "method.",
        "",
    ]
    for task in SPEED_TASKS:
        if task not in report["tasks"]:
            continue
        found = report["tasks"][task]
        lines += [
            f"### {task} ({found['cases']} prompts)",
            "",
            "| method | wall s | tokens/s | vs plain, same path | vs eager plain | vs transformers prompt lookup | "
            "decode vs eager plain | passes / token | mean accepted |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for row in found["speedups"]:
            lines.append(
                f"| {row['method']} | {row['wall_s']:.3f} | {row['tokens_per_s']:.1f} | "
                f"{_x(row['vs_plain_same_path'])} | {_x(row['vs_eager_plain'])} | "
                f"{_x(row['vs_transformers_prompt_lookup'])} | {_x(row['decode_vs_eager_plain'])} | "
                f"{row['passes_per_token']:.3f} | {row['mean_accepted']:.2f} |"
            )
        lines.append("")
    lines += problems_markdown(report)
    if report.get("call1"):
        lines += call1_markdown(report["call1"])
    else:
        lines += [
            "Call 1's report was not on this machine (given back between the calls?): see its own `call1.md`.",
            "",
        ]
    return "\n".join(lines) + "\n"


def plot_pass_cost(sweeps: dict[str, dict], path: Path) -> None:
    """Median ms by width, eager vs fast, one panel per sweep (``title -> pass-cost sweep``), saved
    through ``result_files.save_plot``."""
    from specdraft.apps.bench.result_files import save_plot

    save_plot(path, partial(_draw_pass_cost, sweeps))


def _draw_pass_cost(sweeps: dict[str, dict], fig) -> None:
    fig.set_size_inches(6 * len(sweeps), 4)
    axes = fig.subplots(1, len(sweeps), squeeze=False)
    for ax, (title, sweep) in zip(axes[0], sweeps.items()):
        widths = [int(w) for w in sweep["eager_ms"]]
        ax.plot(widths, list(sweep["eager_ms"].values()), marker="o", label="eager (transformers backend)")
        ax.plot(
            widths,
            list(sweep["fast_ms"].values()),
            marker="o",
            label="fast path" + (" (CUDA graphs)" if sweep.get("fast_graphs") else ""),
        )
        ax.set_xscale("log", base=2)
        ax.set_xlabel("new tokens in the verify pass")
        ax.set_ylabel("median ms per pass")
        ax.set_title(f"{title}, context {sweep['context']}")
        ax.set_ylim(bottom=0)
        ax.legend()


def write_call2(out: Path, report: dict, results: dict) -> list[Path]:
    """Call 2's folder (module doc) from ``report`` and the tasks' ``BenchResult``s (``results``)."""
    from specdraft.apps.bench.report import plot

    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "results.json", report)
    (out / "results.md").write_text(markdown(report))
    written = [out / "results.json", out / "results.md"]
    for task in SPEED_TASKS:
        if task in results:
            plot(results[task], out / f"{task}.png")
            written.append(out / f"{task}.png")
    sweeps = {}
    if report.get("pass_cost"):
        sweeps[f"{report['model']['name']} (trained, float32)"] = report["pass_cost"]
    if report.get("call1", {}).get("fast_path_random"):
        sweeps["random weights, call 1's shape (float32)"] = report["call1"]["fast_path_random"]
    if sweeps:
        plot_pass_cost(sweeps, out / "pass_cost.png")
        written.append(out / "pass_cost.png")
    return written


def write_call1(out: Path, report: dict) -> list[Path]:
    """Call 1's ``call1.json`` and ``call1.md``."""
    write_json(out / "call1.json", report)
    (out / "call1.md").write_text(
        "\n".join([f"# GPU run, call 1 (`{report['run']['command']}`)", ""] + call1_markdown(report)) + "\n"
    )
    return [out / "call1.json", out / "call1.md"]

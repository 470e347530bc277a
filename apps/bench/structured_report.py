"""The structured benchmark's report (``StructuredResult``): JSON (everything), a Markdown table per
task and a PNG plot, written through ``result_files.write_results``."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .result_files import write_results
from .structured_bench import ALL, PLAIN, StructuredResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["COLUMNS", "draw", "markdown", "write_structured_report"]

# (summary key, column title, format): "x" a ratio, "%" a share, "" as it is
COLUMNS = [
    ("method", "method", ""),
    ("tokens_per_s", "tokens/s", ""),
    ("speedup", f"speed-up vs {PLAIN}", "x"),
    ("decode_speedup", "after the first token", "x"),
    ("forward_passes_per_token", "target passes / token", ""),
    ("identical_rate", f"identical to {PLAIN}", "%"),
    ("forced_share", "forced tokens", "%"),
    ("grammar_ms_per_token", "grammar ms / token", ""),
    ("grammar_share", "grammar share of decoding", "%"),
    ("valid_schema_rate", "valid JSON + schema", "%"),
    ("finished_rate", "finished", "%"),
]
TASK_TITLES = {ALL: "Both tasks", "extract": "Extraction (JSON schema)", "tool-call": "Tool call (named choice)"}


def _cell(value: Any, kind: str) -> str:
    if value is None:
        return "n/a"
    if kind == "x":
        return f"{value:.2f}x"
    if kind == "%":
        return f"{value:.1%}" if 0 < value < 0.1 else f"{value:.0%}"
    return str(value)


def markdown(result: StructuredResult) -> str:
    """A table per task (both first), the peer's agreement with specdraft, and the setting."""
    env, config = result.environment, result.config
    lines = [
        f"# structured on {result.model} ({result.backend})",
        "",
        f"{config.limit} documents per task ({', '.join(config.tasks)}), seed {config.seed}, up to "
        f"{config.max_new_tokens} new tokens each, greedy, every method under the same constraint except the peer. "
        f"torch {env['torch']}, transformers {env['transformers']}, {env['threads']} threads, "
        f"{env['cuda'] or env['processor']}; {env['time']}. Speed-ups are over plain constrained decoding ({PLAIN}: "
        "no drafter, grammar_drafts=False) in total wall time (prefill included) and after the first token. Forced "
        "tokens: draft tokens the grammar forced and the target accepted, of all generated tokens. Grammar share: "
        "the grammar's seconds (masks, advancing, forced bytes) over the time after the first token. The peer "
        "(llama-cpp-python's own schema-constrained chat completion) runs its own grammar and prompt handling, so "
        "its identical rate is n/a.",
        "",
    ]
    for task in dict.fromkeys(row["task"] for row in result.summaries):
        rows = [row for row in result.summaries if row["task"] == task]
        lines += [f"## {TASK_TITLES.get(task, task)}", ""]
        lines.append("| " + " | ".join(title for _, title, _ in COLUMNS) + " |")
        lines.append("|" + "|".join("---" for _ in COLUMNS) + "|")
        lines += ["| " + " | ".join(_cell(row[key], kind) for key, _, kind in COLUMNS) + " |" for row in rows]
        for row in rows:
            if row["text_equal_rate"] is not None:
                lines.append(
                    f"\n{row['method']}: its answer equals {PLAIN}'s text for text in {row['text_equal_rate']:.0%} of "
                    f"the documents and as a JSON value in {row['same_record_rate']:.0%}; its prompt tokens equal "
                    f"ours in {row['same_prompt_rate']:.0%}."
                )
        lines.append("")
    return "\n".join(lines)


def draw(result: StructuredResult, fig: Figure) -> None:
    """Speed-up over plain constrained decoding per method and task (bars; dots: per document) and
    target passes per token."""
    tasks = list(dict.fromkeys(row["task"] for row in result.summaries))
    methods = list(dict.fromkeys(row["method"] for row in result.summaries))
    by = {(row["task"], row["method"]): row for row in result.summaries}
    fig.set_size_inches(12, 0.5 * len(methods) * len(tasks) + 2.5)
    ax_speed, ax_passes = fig.subplots(1, 2)
    height = 0.8 / len(tasks)
    plain = {m.prompt_id: m.wall_s for m in result.measurements if m.method == PLAIN}
    for t, task in enumerate(tasks):
        ys = [i + t * height for i in range(len(methods))]
        ax_speed.barh(ys, [by[(task, m)]["speedup"] for m in methods], height, label=task)
        ax_passes.barh(ys, [by[(task, m)]["forward_passes_per_token"] for m in methods], height, label=task)
        if task == ALL:
            continue
        for y, name in zip(ys, methods):
            dots = [
                plain[m.prompt_id] / m.wall_s
                for m in result.measurements
                if m.method == name and m.task == task and m.wall_s > 0
            ]
            ax_speed.scatter(dots, [y] * len(dots), color="black", s=8, zorder=3)
    centres = [i + 0.4 - height / 2 for i in range(len(methods))]
    ax_speed.axvline(1.0, color="grey", linestyle="--")
    ax_speed.set_yticks(centres, methods)
    ax_speed.invert_yaxis()
    ax_speed.set_xlabel(f"speed-up vs {PLAIN} (bars: total; dots: per document)")
    ax_speed.legend(fontsize="small")
    ax_passes.set_yticks(centres, [""] * len(methods))
    ax_passes.invert_yaxis()
    ax_passes.set_xlabel("target forward passes per generated token (lower is better)")
    config = result.config
    fig.suptitle(
        f"structured on {result.model} ({result.backend}): {config.limit} documents per task, up to "
        f"{config.max_new_tokens} tokens"
    )


def write_structured_report(result: StructuredResult, out_dir: Path) -> dict[str, Path]:
    """``results.json`` (``result.to_dict()``), ``results.md`` (``markdown``) and ``results.png`` (``draw``)."""
    return write_results(out_dir, result.to_dict(), markdown(result), partial(draw, result))

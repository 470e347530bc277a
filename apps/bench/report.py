"""A benchmark run's results (``BenchResult``): JSON (everything), a Markdown table and a PNG plot,
written through ``result_files``."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from .result_files import save_plot, write_results
from .runner import BenchResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure

COLUMNS = [
    ("method", "method"),
    ("speedup", "speed-up vs plain"),
    ("decode_speedup", "after the first token"),
    ("tokens_per_s", "tokens/s"),
    ("forward_passes_per_token", "target passes / token"),
    ("mean_accepted_tokens", "mean accepted / step"),
    ("identical_rate", "identical to plain greedy"),
]


def retrieval_table(facts: dict) -> list[str]:
    """``BenchResult.retrieval`` as a Markdown table of ``resource | fact | value`` rows (nested
    dicts flattened to dotted fact names); no lines when there are no facts."""
    if not facts:
        return []
    lines = ["Retrieval resources:", "", "| resource | fact | value |", "|---|---|---|"]

    def rows(resource: str, prefix: str, values: dict) -> None:
        for key, value in values.items():
            if isinstance(value, dict):
                rows(resource, f"{prefix}{key}.", value)
            else:
                shown = f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)
                lines.append(f"| {resource} | {prefix}{key} | {shown} |")

    for resource, values in facts.items():
        rows(resource, "", values)
    return lines + [""]


def markdown_table(result: BenchResult) -> str:
    env = result.environment
    lines = [
        f"# {result.benchmark} on {result.model}",
        "",
        f"{result.prompts} prompts, up to {result.max_new_tokens} new tokens each, greedy. "
        f"torch {env['torch']}, transformers {env['transformers']}, {env['threads']} threads, "
        f'{env["cuda"] or env["processor"]}; {env["time"]}. "After the first token": the speed-up of the '
        "time after the prompt's prefill, which every method spends alike.",
        "",
        *(
            [
                "Quality of the outputs (identical for every method that is 100% identical): "
                f"`{json.dumps(result.quality)}`",
                "",
            ]
            if result.quality
            else []
        ),
        *retrieval_table(result.retrieval),
        "| " + " | ".join(title for _, title in COLUMNS) + " |",
        "|" + "|".join("---" for _ in COLUMNS) + "|",
    ]
    for summary in result.summaries:
        row = summary.__dict__
        cells = []
        for key, _ in COLUMNS:
            value = row[key]
            if key in ("speedup", "decode_speedup"):
                cells.append(f"{value:.2f}x")
            elif key == "identical_rate":
                cells.append(f"{value:.0%}")
            else:
                cells.append(str(value))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def draw(result: BenchResult, fig: Figure) -> None:
    """Speed-up per method (bars: total; dots: per prompt) and target passes per token, side by side."""
    names = [s.method for s in result.summaries]
    fig.set_size_inches(12, 0.6 * len(names) + 2.5)
    ax_speed, ax_passes = fig.subplots(1, 2)
    y = range(len(names))
    ax_speed.barh(y, [s.speedup for s in result.summaries], color="#4C72B0")
    for i, name in enumerate(names):  # per-prompt speed-ups as dots
        plain = {m.prompt_id: m.wall_s for m in result.measurements if m.method == result.summaries[0].method}
        dots = [plain[m.prompt_id] / m.wall_s for m in result.measurements if m.method == name and m.wall_s > 0]
        ax_speed.scatter(dots, [i] * len(dots), color="black", s=10, zorder=3)
    ax_speed.axvline(1.0, color="grey", linestyle="--")
    ax_speed.set_yticks(list(y), names)
    ax_speed.invert_yaxis()
    ax_speed.set_xlabel("speed-up vs plain decoding (bars: total; dots: per prompt)")
    ax_passes.barh(y, [s.forward_passes_per_token for s in result.summaries], color="#55A868")
    ax_passes.set_yticks(list(y), [""] * len(names))
    ax_passes.invert_yaxis()
    ax_passes.set_xlabel("target forward passes per generated token (lower is better)")
    fig.suptitle(
        f"{result.benchmark} on {result.model}: {result.prompts} prompts, up to {result.max_new_tokens} new tokens each"
    )


def plot(result: BenchResult, path: Path) -> None:
    """``draw``'s figure as a PNG at ``path``."""
    save_plot(path, partial(draw, result))


def write_report(result: BenchResult, out_dir: Path) -> dict[str, Path]:
    """``results.json`` (``result.to_dict()``), ``results.md`` (``markdown_table``) and ``results.png``
    (``draw``) in ``out_dir``, through ``result_files.write_results``."""
    return write_results(out_dir, result.to_dict(), markdown_table(result), partial(draw, result))

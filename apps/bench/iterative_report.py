"""Reports of ``specdraft bench iterative-rag``: ``results.json`` (everything, every answer),
``results.md`` (the collection, the retrievers' costs, one table row per model x retriever x method)
and ``results.png`` (speed-up and retrieval share per method, one panel per model)."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .result_files import write_results

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["draw", "markdown", "scheduler_note", "write_iterative_report"]

# RaLMSpec (Zhang et al., ICML 2024), Table 1 ranges over its language models and datasets.
PAPER_SPEEDUPS = {"dense": "1.75-2.39x", "hnsw": "1.04-1.39x", "bm25": "1.31-1.77x"}
GOALS = {"dense": 2.0, "hnsw": 1.2, "bm25": 1.5}


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.1f} ms"


def scheduler_note(config: dict[str, Any]) -> str:
    """Which OS^3 schedulers the run used (``IterativeBenchConfig.scheduler_per_answer``; results
    written before the option do not say)."""
    if "scheduler_per_answer" not in config:
        return "OS^3 scheduler: not recorded (a run from before `--scheduler-per-answer`)."
    if config["scheduler_per_answer"]:
        return "OS^3 scheduler: a fresh one per answer (`--scheduler-per-answer`), starting from its prior each time."
    return (
        "OS^3 scheduler: one per model, retriever and method, shared by all the questions (its estimates carry "
        "from one answer to the next, as in the service)."
    )


def markdown(result: dict[str, Any]) -> str:
    config, collection, env = result["config"], result["collection"], result["environment"]
    by_source = ", ".join(f"{n:,} {source}" for source, n in collection["by_source"].items())
    lines = [
        "# Iterative RAG: plain vs speculative retrieval",
        "",
        f"Knowledge base: {collection['chunks']:,} chunks ({by_source}; {collection['words']:,} words) of at most "
        f"{config['kb']['chunk_words']} words, embedded with {collection['embedder']} (max_seq_length "
        f"{collection['max_seq_length']}). {config['limit']} squad_shifts questions (seed {config['seed']}), up to "
        f"{config['max_new_tokens']} new tokens, greedy; a retrieval every {config['stride']} tokens with the last "
        f"{config['query_tokens']} tokens as the query; speculation up to {config['max_strides']} strides. torch "
        f"{env['torch']}, {env['threads']} threads on {env['cpus']} CPUs (shared machine); {env['time']}.",
        "",
        scheduler_note(config),
        "",
        "| retriever | build | one query's search | of which: prepare (embed / tokenize) | of which: search of the "
        "prepared query | bare FAISS flat search | query embedding | paper's speed-up |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for kind, facts in result["retrievers"].items():
        lines.append(
            f"| {kind} | {facts['build_s']:.1f} s | {_ms(facts.get('search_s'))} | {_ms(facts.get('prepare_s'))} | "
            f"{_ms(facts.get('prepared_search_s'))} | {_ms(facts.get('faiss_flat_search_s'))} | "
            f"{_ms(facts.get('embed_query_s'))} | {PAPER_SPEEDUPS.get(kind, '-')} |"
        )
    lines += [
        "",
        "Decoding step (plain generation seconds per token, re-prefills included; in brackets one bare "
        "one-token pass): "
        + ", ".join(
            f"{model}{' (' + facts['backend'] + ')' if 'backend' in facts else ''} {_ms(facts['decode_step_s'])}"
            + (f" [{_ms(facts['one_token_pass_s'])}]" if "one_token_pass_s" in facts else "")
            for model, facts in result["models"].items()
        ),
        "",
    ]
    columns = [
        ("model", "model"),
        ("retriever", "retriever"),
        ("method", "method"),
        ("speedup", "speed-up"),
        ("retrieval_share", "time in retrieval"),
        ("wait_share", "time waiting for retrieval"),
        ("cache_hit_rate", "cache hit rate"),
        ("rollbacks_per_answer", "rollbacks / answer"),
        ("verifications_per_answer", "verifications / answer"),
        ("plain_strides", "plain strides (OS^3 s = 0)"),
        ("wall_s", "wall s"),
        ("identical_rate", "identical"),
    ]
    lines += ["| " + " | ".join(title for _, title in columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    for row in result["summaries"]:
        cells = []
        for key, _ in columns:
            value = row.get(key)
            if value is None:
                cells.append("-")
            elif key == "speedup":
                cells.append(f"{value:.2f}x")
            elif key in ("retrieval_share", "wait_share", "cache_hit_rate", "identical_rate"):
                cells.append(f"{value:.0%}")
            elif key == "plain_strides":
                cells.append(f"{value}/{row['strides']}")
            else:
                cells.append(str(value))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def draw(result: dict[str, Any], fig: Figure) -> None:
    """Speed-up vs plain iterative RAG per retriever and method, one panel per model."""
    models = list(dict.fromkeys(row["model"] for row in result["summaries"]))
    fig.set_size_inches(6 * len(models), 4)
    axes = fig.subplots(1, len(models), squeeze=False)
    for ax, model in zip(axes[0], models):
        rows = [row for row in result["summaries"] if row["model"] == model]
        labels = [f"{row['retriever']}\n{row['method']}" for row in rows]
        colors = {"plain": "#999999", "speculative": "#4C72B0", "speculative+async+os3": "#DD8452"}
        ax.barh(
            range(len(rows)),
            [row["speedup"] for row in rows],
            color=[colors.get(row["method"], "#55A868") for row in rows],
        )
        for y, row in enumerate(rows):
            ax.text(
                row["speedup"],
                y,
                f" {row['speedup']:.2f}x, {row['retrieval_share']:.0%} retrieval",
                va="center",
                fontsize=7,
            )
        ax.set_yticks(range(len(rows)), labels, fontsize=7)
        ax.invert_yaxis()
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set_xlim(0, max([1.0] + [row["speedup"] for row in rows]) * 1.45)  # room for the labels
        ax.set_xlabel("speed-up vs plain iterative RAG (wall clock)")
        ax.set_title(model)


def write_iterative_report(result: dict[str, Any], out_dir: Path) -> dict[str, Path]:
    """Writes results.json, results.md and results.png into ``out_dir`` (``result_files.write_results``);
    returns their paths."""
    return write_results(out_dir, result, markdown(result), partial(draw, result))

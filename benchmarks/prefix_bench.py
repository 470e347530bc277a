"""Prefix-cache benchmark: time to first token with and without the prefix cache, in one run.

Time to first token is the prefill's time (the first token comes out of the prefill's logits). For
every measured request, one right after the other on the same model: a **cold** prefill of the whole
prompt (``Target.prefill``) and a **warm** one from the longest prefix the model's cache holds from
the requests before it (``prefill_cached(..., store=False)``), each timed in wall-clock and in
process CPU seconds (the CPU time is the steadier figure on a shared machine); then the whole
request is generated without the cache (``prefix_cache=False``) and with it (the default, which
leaves the request's sequence in the cache for the next ones), and the two outputs are compared
token for token. Scenarios, each a sequence of requests as a user sends them:

- ``chat-multiturn``: reserved ShareGPT conversations (``datasets.chat_multiturn``). Turn 1 (not
  measured) is the conversation up to its second-to-last user message; the model answers it (up to
  ``--max-new-tokens``). Turn 2 (measured) is turn 1, the model's own answer as the assistant
  message, and the last user message, in the chat template: what a chat client sends next.
- ``grammar-sentences``: the grammar corrector's prompts (the fixed instruction, then the sentence)
  for sentences with injected errors, one after the other, with the copydraft drafter as the
  service runs them. The first request finds an empty cache.
- ``rag``: a question over its ``--top-k`` retrieved passages (``RAGPipeline.prompt_ids``; the
  prompts share the instruction), then a **follow-up**: the next question of the set asked over the
  same passages (a user asking a second question about the documents at hand). Both are measured.

Writes ``results.json`` (every request, the per-scenario summaries, the cache's counters),
``results.md`` and ``results.png``. Run: ``python benchmarks/prefix_bench.py --help``.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from specdraft import Drafter, GenerationConfig, Model, ModelConfig, SpeculationConfig, SpeculativeGenerator
from specdraft.apps.bench.result_files import save_plot, write_results
from specdraft.prefix_cache import PrefixCache, PrefixCacheConfig, configure_prefix_cache

if TYPE_CHECKING:
    from matplotlib.figure import Figure

SCENARIOS = ("chat-multiturn", "grammar-sentences", "rag")


@dataclass(frozen=True)
class Request:
    """One request of a scenario. ``measured`` False: it only leaves its sequence in the cache."""

    scenario: str
    id: str
    prompt_ids: list[int]
    max_new_tokens: int
    make_drafter: Callable[[], Drafter | None] = lambda: None
    speculation: SpeculationConfig = SpeculationConfig()
    measured: bool = True


@dataclass
class Row:
    scenario: str
    id: str
    prompt_tokens: int
    cached_tokens: int
    cold_ttft_s: float
    warm_ttft_s: float
    cold_ttft_cpu_s: float
    warm_ttft_cpu_s: float
    cold_wall_s: float
    warm_wall_s: float
    generated_tokens: int
    identical: bool


def generate(model: Model, request: Request, cache: bool):
    config = GenerationConfig(max_new_tokens=request.max_new_tokens)
    start = time.perf_counter()
    result = SpeculativeGenerator(model, request.speculation, prefix_cache=cache).generate(
        request.prompt_ids, request.make_drafter(), config
    )
    return result, time.perf_counter() - start


def timed_prefill(model: Model, prompt_ids: list[int], cache: PrefixCache | None) -> tuple[float, float, int]:
    """(wall seconds, process CPU seconds, tokens restored) of one prefill; ``cache`` None: cold.
    Nothing is stored in the cache."""
    target = model.new_target()
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        cached = 0 if cache is None else target.prefill_cached(prompt_ids, cache, store=False)
        if cache is None:
            target.prefill(prompt_ids)
        return time.perf_counter() - wall, time.process_time() - cpu, cached
    finally:
        target.close()


def run_request(model: Model, request: Request, cache: PrefixCache) -> Row | None:
    """The module docstring's measurement; an unmeasured request is only generated (None)."""
    if not request.measured:
        generate(model, request, cache=True)
        return None
    cold_s, cold_cpu, _ = timed_prefill(model, request.prompt_ids, None)
    warm_s, warm_cpu, cached = timed_prefill(model, request.prompt_ids, cache)
    cold, cold_wall = generate(model, request, cache=False)
    warm, warm_wall = generate(model, request, cache=True)
    assert warm.stats.cached_prompt_tokens == cached
    return Row(
        request.scenario,
        request.id,
        len(request.prompt_ids),
        cached,
        round(cold_s, 4),
        round(warm_s, 4),
        round(cold_cpu, 4),
        round(warm_cpu, 4),
        round(cold_wall, 4),
        round(warm_wall, 4),
        len(warm.token_ids),
        cold.token_ids == warm.token_ids,
    )


# --- scenarios ----------------------------------------------------------------------------------
def chat_requests(model: Model, limit: int, seed: int, max_new: int) -> Iterator[Request]:
    from specdraft.apps.bench.datasets import chat_multiturn
    from specdraft.apps.bench.rag_suites import chat_prompt_ids

    for prompt in chat_multiturn(limit, seed):
        messages = list(prompt.messages)
        if len(messages) < 3 or messages[-2]["role"] != "assistant":
            continue
        earlier = messages[:-2]
        turn1 = chat_prompt_ids(model, earlier)  # answered with the cache on: it leaves its sequence there
        answer = SpeculativeGenerator(model).generate(turn1, None, GenerationConfig(max_new_tokens=max_new)).text
        turn2 = chat_prompt_ids(model, earlier + [{"role": "assistant", "content": answer}, messages[-1]])
        yield Request("chat-multiturn", f"{prompt.id}:turn2", turn2, max_new)


def grammar_requests(model: Model, limit: int, seed: int) -> Iterator[Request]:
    from specdraft.apps.bench.datasets.grammar_data import GRAMMAR_SETS
    from specdraft.copydraft.corrector import INSTRUCTION
    from specdraft.copydraft.editor import Editor

    editor = Editor(model)
    for item in GRAMMAR_SETS["grammar-sentences"](limit=limit, seed=seed):
        prompt_ids, source_ids, max_new = editor.prepare(INSTRUCTION, item.source)
        yield Request(
            "grammar-sentences",
            item.id,
            prompt_ids,
            max_new,
            lambda s=source_ids: editor.drafter(s),
            editor.config.speculation,
        )


def rag_requests(model: Model, limit: int, seed: int, top_k: int, max_new: int) -> Iterator[Request]:
    from specdraft.apps.bench import datasets
    from specdraft.apps.bench.rag_suites import RAG_PASSAGE_CAP, cached_index
    from specdraft.retrieval.embedder import Embedder
    from specdraft.retrieval.pipeline import NO_DRAFTER, RAGConfig, RAGPipeline

    passages = datasets.rag_passages()[:RAG_PASSAGE_CAP]
    indexed = {passage["id"] for passage in passages}
    questions = [record for record in datasets.rag_questions(seed) if record["id"] in indexed][: limit + 1]
    index, _ = cached_index(passages, Embedder())
    pipeline = RAGPipeline(index, model, NO_DRAFTER, None, RAGConfig(top_k=top_k, max_new_tokens=max_new))
    for record, follow_up in zip(questions, questions[1:]):
        hits = index.search(record["question"], top_k)
        yield Request("rag", record["id"], pipeline.prompt_ids(record["question"], hits), max_new)
        yield Request("rag-follow-up", record["id"], pipeline.prompt_ids(follow_up["question"], hits), max_new)


def requests_for(scenario: str, model: Model, args: argparse.Namespace) -> Iterator[Request]:
    if scenario == "chat-multiturn":
        return chat_requests(model, args.limit, args.seed, args.max_new_tokens)
    if scenario == "grammar-sentences":
        return grammar_requests(model, args.limit, args.seed)
    return rag_requests(model, args.limit, args.seed, args.top_k, args.max_new_tokens)


# --- summary and report ---------------------------------------------------------------------------
def summarize(rows: list[Row]) -> list[dict]:
    out = []
    for scenario in dict.fromkeys(row.scenario for row in rows):
        mine = [row for row in rows if row.scenario == scenario]
        cold, warm = sum(r.cold_ttft_s for r in mine), sum(r.warm_ttft_s for r in mine)
        cold_cpu, warm_cpu = sum(r.cold_ttft_cpu_s for r in mine), sum(r.warm_ttft_cpu_s for r in mine)
        out.append(
            {
                "scenario": scenario,
                "requests": len(mine),
                "mean_prompt_tokens": round(sum(r.prompt_tokens for r in mine) / len(mine), 1),
                "mean_cached_tokens": round(sum(r.cached_tokens for r in mine) / len(mine), 1),
                "cached_share": round(
                    sum(r.cached_tokens for r in mine) / max(1, sum(r.prompt_tokens for r in mine)), 3
                ),
                "mean_ttft_cold_s": round(cold / len(mine), 4),
                "mean_ttft_warm_s": round(warm / len(mine), 4),
                "ttft_speedup": round(cold / warm, 2) if warm else 0.0,
                "mean_ttft_cpu_cold_s": round(cold_cpu / len(mine), 4),
                "mean_ttft_cpu_warm_s": round(warm_cpu / len(mine), 4),
                "ttft_cpu_speedup": round(cold_cpu / warm_cpu, 2) if warm_cpu else 0.0,
                "wall_speedup": round(
                    sum(r.cold_wall_s for r in mine) / max(1e-9, sum(r.warm_wall_s for r in mine)), 2
                ),
                "identical_rate": round(sum(r.identical for r in mine) / len(mine), 3),
            }
        )
    return out


def markdown(result: dict) -> str:
    env = result["environment"]
    lines = [
        f"# Prefix cache: time to first token on {result['model']} ({result['backend']})",
        "",
        "Each request's prefill timed cold (no prefix cache) and warm (the cache as the requests before it left it), "
        "in one run (wall-clock; CPU: the process's CPU seconds), then the whole request generated both ways and "
        f"compared; greedy, up to {result['max_new_tokens']} new tokens (grammar: sized from the sentence). "
        f"{env['processor']}, {env['threads']} threads; {env['time']}.",
        "",
        "| scenario | requests | prompt tokens (mean) | cached tokens (mean) | TTFT cold | TTFT warm | TTFT speed-up "
        "| TTFT CPU s cold / warm | CPU speed-up | whole request speed-up | identical output |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in result["summaries"]:
        lines.append(
            f"| {s['scenario']} | {s['requests']} | {s['mean_prompt_tokens']} | {s['mean_cached_tokens']} "
            f"({s['cached_share']:.0%}) | {s['mean_ttft_cold_s'] * 1e3:.0f} ms | {s['mean_ttft_warm_s'] * 1e3:.0f} ms "
            f"| {s['ttft_speedup']:.2f}x | {s['mean_ttft_cpu_cold_s']:.2f} / {s['mean_ttft_cpu_warm_s']:.2f} | "
            f"{s['ttft_cpu_speedup']:.2f}x | {s['wall_speedup']:.2f}x | {s['identical_rate']:.0%} |"
        )
    lines += ["", f"Cache after the run: `{json.dumps(result['cache'])}`", ""]
    return "\n".join(lines)


def draw(result: dict, fig: Figure) -> None:
    """Mean time to first token per scenario, cold and warm: wall-clock (left) and CPU seconds (right)."""
    summaries = result["summaries"]
    names = [s["scenario"] for s in summaries]
    x = range(len(names))
    fig.set_size_inches(3.2 * len(names) + 2, 4)
    axes = fig.subplots(1, 2)
    for ax, (cold, warm, ratio, label) in zip(
        axes,
        [
            ("mean_ttft_cold_s", "mean_ttft_warm_s", "ttft_speedup", "wall-clock"),
            ("mean_ttft_cpu_cold_s", "mean_ttft_cpu_warm_s", "ttft_cpu_speedup", "process CPU"),
        ],
    ):
        ax.bar([i - 0.2 for i in x], [s[cold] for s in summaries], 0.4, label="no prefix cache", color="#C44E52")
        ax.bar([i + 0.2 for i in x], [s[warm] for s in summaries], 0.4, label="prefix cache", color="#4C72B0")
        for i, s in enumerate(summaries):
            ax.text(i + 0.2, s[warm], f"{s[ratio]:.1f}x", ha="center", va="bottom")
        ax.set_xticks(list(x), names, rotation=15)
        ax.set_ylabel(f"mean time to first token, {label} (s)")
        ax.legend()
    fig.suptitle(f"Prefix cache on {result['model']} ({result['backend']})")


def plot(result: dict, path: Path) -> None:
    """``draw``'s figure as a PNG at ``path``."""
    save_plot(path, partial(draw, result))


def run(args: argparse.Namespace) -> dict:
    from specdraft.apps.bench.runner import environment
    from specdraft.apps.model_pool import ModelPool

    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    if args.backend == "llama-cpp":
        from specdraft.backends.llama_cpp import LlamaCppConfig, LlamaCppModel

        model: Model = LlamaCppModel.load(args.model, LlamaCppConfig(threads=args.threads))
    else:
        model = ModelPool(ModelConfig(device=args.device, backend=args.backend)).get(args.model)
    cache = configure_prefix_cache(model, PrefixCacheConfig())
    rows: list[Row] = []
    warm_up = Request("warm-up", "warm-up", model.encode("Warm up the model once."), 4)
    run_request(model, warm_up, cache)
    for scenario in args.scenarios.split(","):
        cache.clear()  # each scenario starts from an empty cache
        for request in requests_for(scenario, model, args):
            row = run_request(model, request, cache)
            if row is not None:
                rows.append(row)
                print(json.dumps(asdict(row)), flush=True)
    return {
        "model": args.model,
        "backend": model.backend,
        "max_new_tokens": args.max_new_tokens,
        "limit": args.limit,
        "environment": environment(),
        "summaries": summarize(rows),
        "cache": cache.stats(),
        "rows": [asdict(r) for r in rows],
    }


def main(argv: list[str] | None = None) -> int:
    from specdraft.retrieval.pipeline import RAGConfig

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--backend", default="transformers", choices=["transformers", "llama-cpp"])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument(
        "--limit", type=int, default=3, help="conversations / sentences / questions per scenario (default: %(default)s)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--top-k", type=int, default=RAGConfig().top_k)
    parser.add_argument(
        "--threads", type=int, default=0, help="torch / llama.cpp threads (default: 0, the library's own)"
    )
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    result = run(args)
    write_results(args.out, result, markdown(result), partial(draw, result))
    print(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

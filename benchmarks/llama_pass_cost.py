"""What a pass over w tokens and a prompt prefill cost on llama.cpp: specdraft's build beside the
build it replaced and beside stock llama-cpp-python, each in its own process, in one run.

    python benchmarks/llama_pass_cost.py --out docs/bench/llama-pass-cost
    python benchmarks/llama_pass_cost.py --models qwen2.5-coder-0.5b \
        --baseline-lib ~/.cache/specdraft/wheels/<old>/lib --stock-lib <an unpatched build's lib folder>

Configurations (``--baseline-lib``, ``--stock-lib``: the ``llama_cpp/lib`` folder of another build of
the same llama-cpp-python; without ``--baseline-lib`` "before" is skipped; without ``--stock-lib``
"stock" runs on the baseline build, or the installed one):

- ``specdraft``: the installed (patched) build as specdraft loads it (weights repacked, ggml's tiled
  kernel for Q6_K only, every row's logits in a verification pass); also reports the load-time
  probe's verdict and the cost curve it measured.
- ``before``: the baseline build, loaded as specdraft loads the installed one (``--baseline-as
  specdraft``, the default: the previous kernels in today's configuration) or as specdraft loaded it
  before the tiled-q6k patch (``--baseline-as untiled``: no repacking, ``GGML_CPU_TILED_MM=0``).
- ``stock``: llama-cpp-python's own ``Llama`` with its defaults (repacking on, ggml's tiled kernel
  on for every K-quant, flash attention as it chooses), on the stock build: what a CPU user has
  without specdraft. Its passes are timed with ``logits_all=True`` (every row's logits, as a
  verification needs).

For each: the median milliseconds of a pass over w tokens after ``--context`` tokens (then rolled
back), its ratio to a one-token pass, the marginal cost of a token in the widest pass, and the
tokens per second of a ``--prefill``-token prompt (logits of its last row only). Every process uses
``--threads`` threads. With ``--rounds N`` every configuration runs N times, interleaved, and each width
keeps its fastest round (and the prefill its fastest): on a shared machine, where another process slows
a stretch of the run, the configurations are then compared at their best rather than at whatever moment
each ran. Writes results.json, results.md and results.png (cost ratio by width).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

WIDTHS = (1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32)
CONFIGS = ("specdraft", "before", "stock")
# how "before" is loaded (--baseline-as), as the report names it
BASELINE_AS = {
    "specdraft": "loaded as specdraft loads it today",
    "untiled": "no repacking, GGML_CPU_TILED_MM=0",
}


def _median_seconds(run, reps: int) -> float:
    run()  # warm-up
    times = []
    for _ in range(reps):
        began = time.perf_counter()
        run()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def pass_ms(ctx, ids: list[int], context: int, widths: list[int], reps: int) -> dict[int, float]:
    """Median ms of a pass over w tokens (every row's logits) at positions ``context...`` for each
    width w, on ``ctx`` (a ``LlamaContext`` holding ``ids[:context]``), each pass rolled back after."""
    from specdraft.backends.llama_cpp.exactness import MAIN

    out = {}
    for width in widths:
        tokens = ids[context : context + width]

        def one_pass() -> None:
            ctx.decode(tokens, list(range(context, context + width)), [(MAIN,)] * width, [True] * width)
            ctx.seq_rm(MAIN, context, -1)

        out[width] = 1000 * _median_seconds(one_pass, reps)
    return out


def measure_specdraft(
    model_name: str, repack: bool, widths: list[int], context: int, prefill: int, reps: int, threads: int
) -> dict:
    """Pass cost and prefill through specdraft's own llama.cpp backend (``LlamaContext``)."""
    from specdraft import LlamaCppModel
    from specdraft.backends.llama_cpp.exactness import MAIN, varied_ids
    from specdraft.backends.llama_cpp.model import LlamaCppConfig

    model = LlamaCppModel.load(model_name, LlamaCppConfig(repack=repack, threads=threads))
    ids = varied_ids(model, max(context + max(widths), prefill))
    ctx = model.acquire_context()
    try:
        ctx.decode(ids[:context], list(range(context)), [(MAIN,)] * context, [False] * (context - 1) + [True])
        cost = pass_ms(ctx, ids, context, widths, reps)

        def prefill_once() -> None:
            ctx.clear()
            for start in range(0, prefill, ctx.n_batch):
                chunk = ids[start : min(prefill, start + ctx.n_batch)]
                ctx.decode(
                    chunk,
                    list(range(start, start + len(chunk))),
                    [(MAIN,)] * len(chunk),
                    [False] * (len(chunk) - 1) + [True],
                )

        prefill_s = _median_seconds(prefill_once, max(1, reps // 2))
    finally:
        model.release_context(ctx)
    return {
        "pass_ms": cost,
        "prefill_tok_s": prefill / prefill_s,
        "probe_exact": model.exact,
        "probe_cost_ms": {w: 1000 * s for w, s in model.cost.snapshot().items()},
    }


class _StockTokens:
    """What ``varied_ids`` needs of a model (a tokenizer), for llama-cpp-python's ``Llama``."""

    def __init__(self, llama) -> None:
        self.tokenizer = self
        self._llama = llama

    def encode(self, text: str) -> list[int]:
        return self._llama.tokenize(text.encode("utf-8"), add_bos=False)


def measure_stock(model_name: str, widths: list[int], context: int, prefill: int, reps: int, threads: int) -> dict:
    """Pass cost and prefill through llama-cpp-python's ``Llama`` with its defaults."""
    from llama_cpp import Llama

    from specdraft.backends.llama_cpp.exactness import varied_ids
    from specdraft.models import gguf_path

    path = str(gguf_path(model_name))
    common = dict(model_path=path, n_ctx=2048, n_batch=512, n_threads=threads, n_threads_batch=threads, verbose=False)
    llama = Llama(logits_all=True, **common)
    ids = varied_ids(_StockTokens(llama), max(context + max(widths), prefill))
    llama.reset()
    llama.eval(ids[:context])
    pass_ms = {}
    for width in widths:

        def one_pass() -> None:
            llama.eval(ids[context : context + width])
            llama._ctx.kv_cache_seq_rm(-1, context, -1)  # roll back, as a rejected draft is
            llama.n_tokens = context

        pass_ms[width] = 1000 * _median_seconds(one_pass, reps)
    llama.close()
    llama = Llama(logits_all=False, **common)

    def prefill_once() -> None:
        llama.reset()
        llama._ctx.kv_cache_clear()
        llama.eval(ids[:prefill])

    prefill_s = _median_seconds(prefill_once, max(1, reps // 2))
    return {"pass_ms": pass_ms, "prefill_tok_s": prefill / prefill_s}


def worker(args: argparse.Namespace) -> int:
    widths = [int(w) for w in args.widths.split(",")]
    if args.worker == "stock":
        result = measure_stock(args.model, widths, args.context, args.prefill, args.reps, args.threads)
    else:
        repack = args.worker == "specdraft" or args.baseline_as == "specdraft"
        result = measure_specdraft(args.model, repack, widths, args.context, args.prefill, args.reps, args.threads)
    print(json.dumps(result))
    return 0


def run_config(config: str, model: str, args: argparse.Namespace) -> dict | None:
    env = dict(os.environ)
    env.pop("GGML_CPU_TILED_MM", None)  # each configuration as it sets (or leaves) it itself
    lib = {"specdraft": None, "before": args.baseline_lib, "stock": args.stock_lib or args.baseline_lib}[config]
    if config == "before" and not lib:
        return None
    if lib:
        env["LLAMA_CPP_LIB_PATH"] = str(Path(lib).expanduser())
    if config == "before" and args.baseline_as == "untiled":
        env["GGML_CPU_TILED_MM"] = "0"  # what specdraft's llama.cpp backend set before the tiled-q6k patch
    command = [
        sys.executable,
        __file__,
        "--worker",
        config,
        "--model",
        model,
        "--widths",
        args.widths,
        "--context",
        str(args.context),
        "--prefill",
        str(args.prefill),
        "--reps",
        str(args.reps),
        "--threads",
        str(args.threads),
        "--baseline-as",
        args.baseline_as,
    ]
    print(f"[{model}] {config}", file=sys.stderr, flush=True)
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    result["pass_ms"] = {int(w): ms for w, ms in result["pass_ms"].items()}
    return result


def best_of(rounds: list[dict]) -> dict:
    """One configuration's rounds as one result: per width the fastest round's median pass, the fastest
    prefill (a shared machine only adds time), the rest from the first round; then the derived fields."""
    result = dict(rounds[0])
    result["pass_ms"] = {w: min(r["pass_ms"][w] for r in rounds) for w in rounds[0]["pass_ms"]}
    result["prefill_tok_s"] = max(r["prefill_tok_s"] for r in rounds)
    result["rounds"] = len(rounds)
    one, widest = result["pass_ms"][1], max(result["pass_ms"])
    result["pass_ratio"] = {w: ms / one for w, ms in result["pass_ms"].items()}
    result["marginal_ms_per_token"] = (result["pass_ms"][widest] - one) / (widest - 1)
    result["prefill_ms_per_token"] = 1000 / result["prefill_tok_s"]
    return result


def draw_pass_ratios(figure, series: list[tuple[str, dict[int, float]]], title: str) -> None:
    """A pass's cost over a one-token pass's, by width, one line per (label, {width: ratio}), log-log,
    beside the line of w one-token passes (no gain from batching)."""
    axes = figure.add_subplot(1, 1, 1)
    for label, ratios in series:
        widths = sorted(ratios)
        axes.plot(widths, [ratios[w] for w in widths], marker="o", label=label)
    top = max(max(ratios) for _, ratios in series)
    axes.plot([1, top], [1, top], color="grey", linestyle=":", label="w one-token passes")
    axes.set_xscale("log", base=2)
    axes.set_yscale("log", base=2)
    axes.set_xlabel("tokens in the pass")
    axes.set_ylabel("cost / one-token pass")
    axes.set_title(title)
    axes.legend(fontsize=7)


def report(results: list[dict], meta: dict) -> str:
    from specdraft.apps.bench.result_files import markdown_table

    widths = sorted(results[0]["pass_ms"])
    lines = [
        f"# llama.cpp pass cost and prefill ({meta['threads']} threads, pass after {meta['context']} tokens, "
        f"prefill of {meta['prefill']})\n"
    ]
    lines.append(
        f"Builds: specdraft = the installed one; before = {meta['baseline_lib'] or '-'} "
        f"({BASELINE_AS[meta.get('baseline_as', 'untiled')]}); "
        f"stock = {meta['stock_lib'] or 'the installed one'} (its defaults).\n"
    )
    rounds = meta.get("rounds", 1)
    if rounds > 1:
        lines.append(
            f"Best of {rounds} rounds, the builds interleaved: per width the fastest round's median, the fastest "
            "prefill (another process on a shared machine only adds time).\n"
        )
    lines.append("Median ms of a pass over w tokens, every row's logits (x a one-token pass):\n")
    lines.append(
        markdown_table(
            ["model", "build"] + [f"w={w}" for w in widths],
            [
                [r["model"], r["config"]] + [f"{r['pass_ms'][w]:.1f} (x{r['pass_ratio'][w]:.2f})" for w in widths]
                for r in results
            ],
        )
    )
    lines.append(
        f"\nPrefill of a {meta['prefill']}-token prompt (its last row's logits only), "
        "and the cost of one more token in the widest pass:\n"
    )
    lines.append(
        markdown_table(
            [
                "model",
                "build",
                "prefill tok/s",
                "prefill ms/token",
                f"marginal ms/token at w={widths[-1]}",
                "probe at load",
            ],
            [
                [
                    r["model"],
                    r["config"],
                    f"{r['prefill_tok_s']:.1f}",
                    f"{r['prefill_ms_per_token']:.2f}",
                    f"{r['marginal_ms_per_token']:.2f}",
                    {True: "exact", False: "NOT exact", None: "-"}[r.get("probe_exact")],
                ]
                for r in results
            ],
        )
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--models",
        default="qwen2.5-coder-0.5b,qwen2.5-coder-1.5b",
        help="comma-separated registry names (default: %(default)s)",
    )
    parser.add_argument("--baseline-lib", help="llama_cpp/lib folder of specdraft's previous build ('before')")
    parser.add_argument(
        "--baseline-as",
        choices=sorted(BASELINE_AS),
        default="specdraft",
        help="load 'before' as specdraft loads its build today, or as before the tiled-q6k patch "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--stock-lib", help="llama_cpp/lib folder of an unpatched build ('stock'; default: --baseline-lib)"
    )
    parser.add_argument(
        "--widths", default=",".join(map(str, WIDTHS)), help="pass widths to time (default: %(default)s)"
    )
    parser.add_argument(
        "--context", type=int, default=300, help="tokens before the timed passes (default: %(default)s)"
    )
    parser.add_argument(
        "--prefill", type=int, default=512, help="prompt tokens of the prefill timing (default: %(default)s)"
    )
    parser.add_argument("--reps", type=int, default=5, help="timed passes per width (default: %(default)s)")
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run every configuration this many times, interleaved, and keep each width's fastest median and "
        "the fastest prefill (for a shared machine; default: %(default)s)",
    )
    parser.add_argument("--threads", type=int, default=2, help="threads for every build (default: %(default)s)")
    parser.add_argument("--out", type=Path, help="results folder")
    parser.add_argument("--worker", choices=CONFIGS, help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args)
    if args.out is None:
        parser.error("--out is required")

    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    results = []
    for model in args.models.split(","):
        rounds: dict[str, list[dict]] = {}
        for _ in range(args.rounds):  # the configurations interleaved, so a noisy stretch hits each alike
            for config in CONFIGS:
                result = run_config(config, model, args)
                if result is not None:
                    rounds.setdefault(config, []).append(result)
        results += [{"model": model, "config": config, **best_of(found)} for config, found in rounds.items()]
    meta = {
        "rounds": args.rounds,
        "threads": args.threads,
        "context": args.context,
        "prefill": args.prefill,
        "reps": args.reps,
        "baseline_lib": args.baseline_lib,
        "baseline_as": args.baseline_as,
        "stock_lib": args.stock_lib or args.baseline_lib,
        "python": sys.version.split()[0],
    }

    def draw(figure) -> None:
        draw_pass_ratios(
            figure, [(f"{r['model']} {r['config']}", r["pass_ratio"]) for r in results], "llama.cpp pass cost by width"
        )

    from specdraft.apps.bench.result_files import write_results

    paths = write_results(args.out, {"meta": meta, "results": results}, report(results, meta), draw)
    print(paths["markdown"].read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""llama.cpp as specdraft builds it: is every pass width exact, and what does a pass over w tokens cost?

    python benchmarks/llama_batch_invariance.py --out docs/bench/llama-batch-invariant
    python benchmarks/llama_batch_invariance.py --models qwen2.5-coder-0.5b --widths 1,2,4,8,16

For each GGUF model: (1) exactness, the logits of one pass over w tokens against w one-token passes
(``specdraft.backends.llama_cpp.exactness.compare``), for widths 1-48 at several context lengths, as
rows differing and the largest difference in one logit; (2) the median milliseconds of a pass over
w tokens after a ``--context``-token prefix (each followed by a rollback), and its ratio to a
one-token pass. Writes results.json, results.md and results.png (cost ratio by width).

Run it under another build of llama-cpp-python (``PYTHONPATH=<its site folder>``) to compare
builds: the JSON records ``llama_cpp.__version__`` and the ``GGML_CPU_TILED_MM`` in force.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

if (
    not __package__
):  # run as a script (python benchmarks/llama_batch_invariance.py): the repository root, for `benchmarks.*`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.llama_pass_cost import draw_pass_ratios, pass_ms  # noqa: E402
from specdraft import LlamaCppModel  # noqa: E402
from specdraft.apps.bench.result_files import markdown_table, write_results  # noqa: E402
from specdraft.backends.llama_cpp.exactness import MAIN, compare, varied_ids  # noqa: E402


def context_pass_ms(
    model: LlamaCppModel, ids: list[int], context: int, widths: list[int], reps: int
) -> dict[int, float]:
    """Median ms of a pass over w tokens after ``context`` tokens (one warm-up pass per width)."""
    ctx = model.acquire_context()
    try:
        ctx.decode(ids[:context], list(range(context)), [(MAIN,)] * context, [False] * (context - 1) + [True])
        return pass_ms(ctx, ids, context, widths, reps)
    finally:
        model.release_context(ctx)


def measure(
    name: str, contexts: list[int], exact_widths: list[int], cost_widths: list[int], cost_context: int, reps: int
) -> dict:
    start = time.perf_counter()
    model = LlamaCppModel.load(name)
    load_s = time.perf_counter() - start
    ids = varied_ids(model, max(contexts + [cost_context]) + max(exact_widths + cost_widths))
    exactness = [c.__dict__ for c in compare(model, ids, contexts, exact_widths)]
    cost = context_pass_ms(model, ids, cost_context, cost_widths, reps)
    return {
        "model": name,
        "load_s": round(load_s, 2),
        "probe_exact": model.exactness.exact,
        "points": len(exactness),
        "points_differing": sum(c["rows_differing"] > 0 for c in exactness),
        "max_abs_diff": max(c["max_abs_diff"] for c in exactness),
        "exactness": exactness,
        "pass_ms": cost,
        "pass_ratio": {w: ms / cost[1] for w, ms in cost.items()},
    }


def report(results: list[dict], meta: dict) -> str:
    widths = sorted(results[0]["pass_ms"])
    lines = [
        f"# llama.cpp batch invariance and pass cost ({meta['llama_cpp']}, {meta['threads']} threads, "
        f"GGML_CPU_TILED_MM={meta['tiled_mm']})\n"
    ]
    lines.append(
        markdown_table(
            ["model", "widths x contexts", "points differing", "largest logit difference", "probe at load"],
            [
                [
                    r["model"],
                    r["points"],
                    r["points_differing"],
                    r["max_abs_diff"],
                    "exact" if r["probe_exact"] else "NOT exact",
                ]
                for r in results
            ],
        )
    )
    lines.append(f"\nPass over w tokens after {meta['cost_context']} tokens: median ms (x one-token pass)\n")
    lines.append(
        markdown_table(
            ["model"] + [f"w={w}" for w in widths],
            [[r["model"]] + [f"{r['pass_ms'][w]:.1f} (x{r['pass_ratio'][w]:.2f})" for w in widths] for r in results],
        )
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--models",
        default="smollm2-135m,qwen2.5-coder-0.5b,qwen2.5-coder-1.5b,gemma-3-270m",
        help="comma-separated registry names (default: %(default)s)",
    )
    parser.add_argument(
        "--contexts", default="100,250,500,760", help="prefix lengths for the exactness check (default: %(default)s)"
    )
    parser.add_argument(
        "--exact-widths", default="1-48", help="widths for the exactness check, 'a-b' or a list (default: %(default)s)"
    )
    parser.add_argument(
        "--widths", default="1,2,4,8,16,32", help="widths whose pass cost is timed (default: %(default)s)"
    )
    parser.add_argument(
        "--context", type=int, default=300, help="prefix before the timed passes (default: %(default)s)"
    )
    parser.add_argument("--reps", type=int, default=7, help="timed passes per width (default: %(default)s)")
    parser.add_argument("--out", type=Path, required=True, help="results folder")
    args = parser.parse_args(argv)

    def ints(text: str) -> list[int]:
        if "-" in text:
            lo, hi = map(int, text.split("-"))
            return list(range(lo, hi + 1))
        return [int(x) for x in text.split(",")]

    import llama_cpp

    meta = {
        "llama_cpp": f"llama-cpp-python {llama_cpp.__version__}",
        "threads": os.cpu_count(),
        "tiled_mm": os.environ.get("GGML_CPU_TILED_MM", "1 (ggml's default; Q6_K only on specdraft's build)"),
        "cost_context": args.context,
        "python": sys.version.split()[0],
    }
    results = []
    for name in args.models.split(","):
        print(f"[{name}] measuring", file=sys.stderr, flush=True)
        results.append(
            measure(name, ints(args.contexts), ints(args.exact_widths), ints(args.widths), args.context, args.reps)
        )

    def draw(figure) -> None:
        draw_pass_ratios(
            figure, [(r["model"], r["pass_ratio"]) for r in results], "llama.cpp pass cost by width (exact build)"
        )

    paths = write_results(args.out, {"meta": meta, "results": results}, report(results, meta), draw)
    print(paths["markdown"].read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

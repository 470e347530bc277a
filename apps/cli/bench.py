"""`specdraft bench`: the benchmark runner's command line (the runner itself: ``specdraft.apps.bench``)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def add_bench_parser(sub) -> None:
    from specdraft import DEFAULT_MODEL, GenerationConfig
    from specdraft.apps.bench.suite_names import OWN_RUNNERS, names
    from specdraft.drafters import DraftModelConfig
    from specdraft.retrieval.pipeline import RAGConfig

    from .model_args import add_model_args

    bench = sub.add_parser(
        "bench",
        help="compare plain decoding, specdraft drafters and transformers' own speculation",
        description=(
            "Run a named benchmark through plain decoding, specdraft's drafters and transformers' "
            "generate (prompt lookup; assisted generation with --draft-model), on the same model in one "
            "run. Prompt sets (chat-summarization, ...) compare prompt lookup and draft models; grammar "
            "sets (grammar-sentences, grammar-paragraphs) compare copydraft and also score the "
            "corrections with ERRANT F0.5. Retrieval sets compare the RAG pipeline's drafters "
            "(reference, datastore, reference+datastore, prompt-lookup): rag retrieves --top-k passages "
            "for each squad_shifts question from a FAISS index of all rag-reading passages (MiniLM "
            "embeddings, built once and cached) and prompts as the RAG pipeline does, the reference "
            "drafter drafting from the retrieved passages; chat-multiturn continues ShareGPT "
            "conversations at a later user turn, the reference drafter drafting from the earlier turns. "
            "Their datastore drafter uses a REST datastore of ShareGPT answers in the model's tokenizer "
            "(built once per tokenizer and cached; it leaves out every conversation chat-multiturn may "
            "draw), and their report adds the datastore's and the index's sizes, build or load time and "
            "lookup/search times. Writes results.json, results.md and results.png; reports speed-up vs "
            "plain decoding, target forward passes per token, mean accepted tokens and whether each "
            "output is identical to plain greedy. Real text is fetched through pip once and cached."
        ),
    )
    bench.add_argument(
        "benchmark",
        nargs="?",
        default="chat-summarization",
        choices=names() + list(OWN_RUNNERS),
        help="benchmark (default: %(default)s); structured: extraction into JSON schemas and tool-call arguments from "
        "real documents, plain constrained decoding vs specdraft's grammar drafter (alone, with prompt lookup, "
        "with documents) and, on llama.cpp, llama-cpp-python's own schema-constrained chat completion "
        "(specdraft.apps.bench.structured_bench; --limit documents per task); edge: a laptop client and a `serve "
        "--edge` server as two processes behind a delaying proxy (specdraft.apps.bench.edge_bench); "
        "iterative-rag: plain iterative RAG vs speculative retrieval over a 200,000-chunk knowledge base "
        "(specdraft.apps.bench.iterative_bench)",
    )
    add_model_args(bench, DEFAULT_MODEL)
    bench.add_argument(
        "--draft-model",
        default=None,
        help="also compare a draft model (specdraft model:NAME and transformers assisted generation)",
    )
    bench.add_argument(
        "--tree-width",
        type=int,
        default=DraftModelConfig().tree_width,
        help="candidates per depth for specdraft's draft model (default: %(default)s)",
    )
    bench.add_argument("--limit", type=int, default=8, help="number of prompts (default: %(default)s)")
    bench.add_argument("--seed", type=int, default=0, help="which prompts are drawn (default: %(default)s)")
    bench.add_argument(
        "--max-new-tokens",
        type=int,
        default=None,
        help=f"tokens per answer (default: {GenerationConfig().max_new_tokens} for prompt, retrieval and edge sets; "
        "iterative-rag and structured: their config's own; grammar sets size it from the input)",
    )
    bench.add_argument(
        "--top-k",
        type=int,
        default=RAGConfig().top_k,
        metavar="K",
        help="rag: passage chunks retrieved per question and put in the prompt (default: %(default)s)",
    )
    bench.add_argument(
        "--datastore-limit",
        type=int,
        default=None,
        metavar="N",
        help="rag, chat-multiturn: index only the first N ShareGPT answers in the datastore, for quick runs "
        "(default: all, about 62,000 answers; the first build takes minutes and is cached per N)",
    )
    bench.add_argument(
        "--alongside",
        choices=["transformers", "llama-cpp"],
        default=None,
        help="also run plain decoding and the first specdraft method on this other backend with the same model, "
        "for context (their ratios are against the main backend's plain decoding)",
    )
    bench.add_argument(
        "--no-peers",
        "--no-transformers",
        dest="no_peers",
        action="store_true",
        help="skip the peers (transformers' generate; llama-cpp-python's generation on --backend llama-cpp)",
    )
    bench.add_argument(
        "--stock-llama-lib",
        default=None,
        metavar="DIR",
        help="--backend llama-cpp: also time llama-cpp-python's plain generation on this other llama.cpp build, "
        "in a process of its own: the llama_cpp/lib folder of an unpatched build, what a CPU user has without "
        "specdraft (`bash scripts/build_stock_llama.sh` builds one and prints its folder)",
    )
    bench.add_argument(
        "--out", type=Path, default=None, help="output folder (default: results/<benchmark>-<model>-<time>)"
    )
    edge = bench.add_argument_group(
        "edge",
        "for `specdraft bench edge`: --model is the server's model (--backend/--dtype/--device its own), "
        "--draft-model the client's (default: --model)",
    )
    edge.add_argument(
        "--draft-backend",
        default="llama-cpp",
        help="edge: the client's backend for --draft-model (default: %(default)s)",
    )
    edge.add_argument(
        "--delays-ms", default="0,20,80", help="edge: added round trips in ms, comma-separated (default: %(default)s)"
    )
    edge.add_argument(
        "--edge-sets",
        default="chat,grammar-sentences",
        help="edge: prompt sets, comma-separated (default: %(default)s)",
    )
    iterative = bench.add_argument_group(
        "iterative-rag",
        "for `specdraft bench iterative-rag` (--limit questions; --max-new-tokens defaults to the bench's own, "
        "IterativeBenchConfig.max_new_tokens)",
    )
    iterative.add_argument(
        "--models",
        default=None,
        help="iterative-rag: models, comma-separated (default: smollm2-135m,qwen2.5-coder-0.5b)",
    )
    iterative.add_argument(
        "--retrievers",
        default="dense,hnsw,bm25",
        help="iterative-rag: retrievers, comma-separated (default: %(default)s)",
    )
    iterative.add_argument(
        "--stride",
        type=int,
        default=4,
        help="iterative-rag: tokens generated between retrievals (default: %(default)s)",
    )
    iterative.add_argument(
        "--kb-chunks",
        type=int,
        default=0,
        metavar="N",
        help="iterative-rag: use the first N chunks of the 200,000-chunk knowledge base (default: all)",
    )
    iterative.add_argument(
        "--max-strides",
        type=int,
        default=4,
        help="iterative-rag: most strides answered from the cache before a verification (default: %(default)s)",
    )
    iterative.add_argument(
        "--scheduler-per-answer",
        action="store_true",
        help="iterative-rag: a fresh OS^3 scheduler for every answer (default: one per model, retriever and method, "
        "shared by all the questions, so its estimates carry over as in the service)",
    )


def given_or(args: argparse.Namespace, default: int) -> int:
    """``--max-new-tokens`` when it was given (any value, the generation default included), else
    ``default``: the benchmark's own."""
    return default if args.max_new_tokens is None else args.max_new_tokens


def run_bench(args: argparse.Namespace) -> int:
    from specdraft import GenerationConfig
    from specdraft.apps.bench.result_files import pyplot

    pyplot()  # every benchmark writes a plot: without the bench extra, say so before loading anything
    if args.stock_llama_lib:
        from specdraft.apps.bench.llama_build_peer import lib_folder

        if args.backend != "llama-cpp" or args.benchmark in ("edge", "iterative-rag"):
            raise SystemExit("--stock-llama-lib: only for the text and structured benchmarks with --backend llama-cpp")
        try:
            lib_folder(args.stock_llama_lib)
        except ValueError as error:
            raise SystemExit(f"--stock-llama-lib {error}") from None
    if args.benchmark == "edge":
        return run_edge_bench_cli(args)
    if args.benchmark == "iterative-rag":
        return run_iterative_bench_cli(args)
    if args.benchmark == "structured":
        return run_structured_bench_cli(args)
    from dataclasses import replace

    from specdraft.apps.bench.report import markdown_table, write_report
    from specdraft.apps.bench.runner import run_suite
    from specdraft.apps.bench.suite import alongside_methods
    from specdraft.apps.bench.suites import build
    from specdraft.apps.model_pool import ModelPool

    from .model_args import model_pool

    args = argparse.Namespace(**{**vars(args), "max_new_tokens": given_or(args, GenerationConfig().max_new_tokens)})
    pool = model_pool(args)
    target = pool.get(args.model)
    suite = build(args, pool, target)
    if args.alongside:
        alongside = ModelPool(replace(pool.model, backend=args.alongside, engine=None), prefix_cache=pool.prefix_cache)
        suite.methods += alongside_methods(suite.methods, alongside.get(args.model))
    result = run_suite(args.benchmark, f"{args.model} ({target.backend})", suite)
    out = (
        args.out
        or Path("results") / f"{args.benchmark}-{args.model.replace('/', '_')}-{time.strftime('%Y%m%d-%H%M%S')}"
    )
    paths = write_report(result, out)
    print(markdown_table(result))
    print("wrote " + ", ".join(str(p) for p in paths.values()), file=sys.stderr)
    return 0


def run_edge_bench_cli(args: argparse.Namespace) -> int:
    from specdraft import GenerationConfig
    from specdraft.apps.bench.edge_bench import EdgeBenchConfig, run_edge_bench
    from specdraft.apps.bench.edge_report import markdown, write_edge_report

    config = EdgeBenchConfig(
        server_model=args.model,
        server_backend=args.backend,
        server_dtype=args.dtype,
        server_device=args.device,
        draft_model=args.draft_model or args.model,
        draft_backend=args.draft_backend,
        sets=tuple(s for s in args.edge_sets.split(",") if s),
        limit=args.limit,
        seed=args.seed,
        max_new_tokens=given_or(args, GenerationConfig().max_new_tokens),
        delays_ms=tuple(int(d) for d in args.delays_ms.split(",") if d),
    )
    out = args.out or Path("results") / f"edge-{args.model.replace('/', '_')}-{time.strftime('%Y%m%d-%H%M%S')}"
    out.mkdir(parents=True, exist_ok=True)
    result = run_edge_bench(config, log_path=str(out / "server.log"))
    paths = write_edge_report(result, out)
    print(markdown(result))
    print("wrote " + ", ".join(str(p) for p in paths.values()), file=sys.stderr)
    return 0


def run_iterative_bench_cli(args: argparse.Namespace) -> int:
    from specdraft.apps.bench.iterative_bench import IterativeBenchConfig, run_iterative_bench
    from specdraft.apps.bench.iterative_report import markdown, write_iterative_report

    defaults = IterativeBenchConfig()
    config = IterativeBenchConfig(
        models=tuple(m for m in args.models.split(",") if m) if args.models else defaults.models,
        retrievers=tuple(r for r in args.retrievers.split(",") if r),
        limit=args.limit,
        seed=args.seed,
        max_new_tokens=given_or(args, defaults.max_new_tokens),
        stride=args.stride,
        max_strides=args.max_strides,
        device=args.device,
        dtype=args.dtype,
        backend=args.backend,
        collection_size=args.kb_chunks,
        scheduler_per_answer=args.scheduler_per_answer,
    )
    out = args.out or Path("results") / f"iterative-rag-{time.strftime('%Y%m%d-%H%M%S')}"
    result = run_iterative_bench(config)
    paths = write_iterative_report(result, out)
    print(markdown(result))
    print("wrote " + ", ".join(str(p) for p in paths.values()), file=sys.stderr)
    return 0


def run_structured_bench_cli(args: argparse.Namespace) -> int:
    from specdraft.apps.bench.structured_bench import StructuredBenchConfig, run_structured_bench
    from specdraft.apps.bench.structured_report import markdown, write_structured_report

    from .model_args import model_pool

    config = StructuredBenchConfig(
        limit=args.limit,
        seed=args.seed,
        max_new_tokens=given_or(args, StructuredBenchConfig().max_new_tokens),
        peers=not args.no_peers,
        stock_llama_lib=args.stock_llama_lib,
    )
    target = model_pool(args).get(args.model)
    result = run_structured_bench(target, config)
    out = args.out or Path("results") / f"structured-{args.model.replace('/', '_')}-{time.strftime('%Y%m%d-%H%M%S')}"
    paths = write_structured_report(result, out)
    print(markdown(result))
    print("wrote " + ", ".join(str(p) for p in paths.values()), file=sys.stderr)
    return 0

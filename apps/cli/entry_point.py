"""The `specdraft` command line: generate, correct, ask, serve, bench, index, datastore, models."""

from __future__ import annotations

import argparse
import os
import sys

# MKL's default small-matrix code path is slow on some CPUs for multi-token passes; AVX2 is the
# fastest here for every pass size (docs/benchmarks.md measures with it). Must be set before torch loads MKL.
os.environ.setdefault("MKL_CBWR", "AVX2")

DESCRIPTION = """\
specdraft: lossless speculative decoding specialised to the application.

A cheap drafter proposes tokens (from the prompt, a small model, ...); the target model checks them
all in one forward pass and keeps exactly what it would have generated itself.
Models: a registry name (smollm2-135m, qwen2.5-coder-0.5b, qwen2.5-coder-1.5b, gemma-3-270m; see
`specdraft models`), a local checkpoint folder, a .gguf file, or a hub id.
"""


def _add_drafter_args(parser: argparse.ArgumentParser, default: str, offers: frozenset[str]) -> None:
    """--drafter (the drafters a completion offering ``offers`` takes, from the registry) and --tree-width."""
    from specdraft.drafters import DraftModelConfig
    from specdraft.retrieval.drafter_registry import drafter_help

    parser.add_argument(
        "--drafter",
        default=default,
        help=drafter_help(offers) + " (default: %(default)s)",
    )
    parser.add_argument(
        "--tree-width",
        type=int,
        default=DraftModelConfig().tree_width,
        help="for model:NAME under greedy decoding: candidates per draft depth (1 = chain) (default: %(default)s)",
    )


def build_parser() -> argparse.ArgumentParser:
    from specdraft import DEFAULT_MODEL, GenerationConfig
    from specdraft.apps.model_pool import COMPLETION_OFFERS
    from specdraft.apps.service.config import ServiceConfig
    from specdraft.apps.service.server import DEFAULT_HOST, DEFAULT_PORT
    from specdraft.retrieval.drafter_registry import DATASTORE

    from .model_args import add_model_args
    from .serve_args import add_access_args

    generation, service = GenerationConfig(), ServiceConfig()

    parser = argparse.ArgumentParser(
        prog="specdraft", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    gen = sub.add_parser(
        "generate",
        help="generate a completion for one prompt",
        description="Generate text for PROMPT and print it (or one JSON object with --json).",
    )
    gen.add_argument("prompt", metavar="PROMPT", help="the prompt text, or - to read it from standard input")
    add_model_args(gen, DEFAULT_MODEL)
    # the drafter a completion request of the service gets by default
    _add_drafter_args(gen, service.drafter, COMPLETION_OFFERS)
    gen.add_argument(
        "--max-new-tokens",
        type=int,
        default=generation.max_new_tokens,
        help="most tokens to generate (default: %(default)s)",
    )
    gen.add_argument(
        "--temperature", type=float, default=generation.temperature, help="0 = greedy (default); > 0 samples"
    )
    gen.add_argument(
        "--top-p", type=float, default=generation.top_p, help="nucleus sampling mass (default: %(default)s)"
    )
    gen.add_argument(
        "--top-k", type=int, default=generation.top_k, help="sample among the k likeliest tokens; 0 = all (default)"
    )
    gen.add_argument("--seed", type=int, default=generation.seed, help="seed for reproducible sampling")
    gen.add_argument(
        "--stop",
        action="append",
        default=list(generation.stop),
        help="stop string (repeatable); not included in the output",
    )
    gen.add_argument("--chat", action="store_true", help="wrap PROMPT in the model's chat template as a user message")
    gen.add_argument(
        "--json",
        action="store_true",
        help='print {"text", "token_ids", "prompt_token_ids", "stats", ...} instead of the text',
    )
    gen.add_argument(
        "--json-schema",
        metavar="FILE",
        help='constrain the answer to the JSON schema in FILE (JSON written as {"key": "value", "n": 1}; the answer '
        'ends when the object is complete, or at --max-new-tokens with finish_reason "length")',
    )

    correct = sub.add_parser(
        "correct",
        help="correct the grammar of a text, drafting from the text itself",
        description="Correct the grammar, spelling and punctuation of TEXT and print the corrected text (or one JSON "
        "object with --json). The model checks the words it keeps from the text many at a time; the output is "
        "exactly what plain decoding gives (--no-speculation), only faster.",
    )
    source = correct.add_mutually_exclusive_group()
    source.add_argument(
        "text", nargs="?", metavar="TEXT", help="the text to correct; - or nothing reads standard input"
    )
    source.add_argument("--file", metavar="PATH", help="read the text from a UTF-8 file")
    add_model_args(correct, service.grammar_model)  # a model whose answers are corrections (see copydraft.corrector)
    correct.add_argument(
        "--no-speculation", action="store_true", help="decode plainly (the same output, slower; for comparison)"
    )
    correct.add_argument(
        "--json",
        action="store_true",
        help='print {"corrected", "edits", "token_ids", "stats", "quality"} instead of the text ("quality": whether '
        "the answer is a correction, see copydraft.answer_check)",
    )

    serve = sub.add_parser(
        "serve",
        help="start the HTTP service (OpenAI-compatible completions, grammar correction, health, demos)",
        description="Serve the target model over HTTP: GET /healthz, POST /v1/completions, POST /v1/chat/completions, "
        "POST /v1/grammar/correct, POST /v1/rag/documents, POST /v1/rag/query, and the demo pages GET "
        "/demo/grammar and GET /demo/rag.",
    )
    add_model_args(serve, DEFAULT_MODEL)
    _add_drafter_args(serve, service.drafter, COMPLETION_OFFERS | {DATASTORE})  # the datastore: with --datastore
    # --host and --port are the server's (``server.serve``), not ServiceConfig's; --index-root, --datastore and
    # --embedding-model default to None, which leaves ServiceConfig's own default in place (see _serve).
    serve.add_argument("--host", default=DEFAULT_HOST, help="address to listen on (default: %(default)s)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (default: %(default)s)")
    serve.add_argument(
        "--grammar-model",
        default=service.grammar_model,
        metavar="NAME",
        help="the model POST /v1/grammar/correct and the grammar demo use when a request names none; loaded on the "
        "first correction (default: %(default)s)",
    )
    serve.add_argument(
        "--extra-model",
        action="append",
        default=list(service.extra_models),
        metavar="NAME",
        help="another model requests may name: as a drafter (model:NAME) or for grammar correction (repeatable)",
    )
    serve.add_argument(
        "--model-alias",
        action="append",
        default=list(service.model_aliases),
        metavar="NAME",
        help="another model name completion requests may send and the served model answers (an OpenAI client's "
        "default, e.g. gpt-3.5-turbo) (repeatable)",
    )
    serve.add_argument(
        "--serve-any-model-name",
        action="store_true",
        help="answer completion requests whatever model name they send, with the served model (default: a 400 naming "
        "the served model)",
    )
    serve.add_argument("--lazy", action="store_true", help="load the model on the first request instead of at start-up")
    serve.add_argument(
        "--index-root",
        default=None,
        metavar="DIR",
        help="folder of the RAG API's named document indexes (default: $SPECDRAFT_INDEX_ROOT or "
        "~/.local/share/specdraft/indexes)",
    )
    serve.add_argument(
        "--datastore",
        default=None,
        metavar="DIR",
        help="a REST datastore built with `specdraft datastore build` for this model, for the RAG drafters datastore "
        "and reference+datastore",
    )
    serve.add_argument(
        "--embedding-model",
        default=None,
        metavar="MODEL",
        help="sentence-transformers model embedding the RAG documents (default: the packaged all-MiniLM-L6-v2)",
    )
    serve.add_argument(
        "--store",
        action="append",
        default=[],
        metavar="NAME=STORE:PATH",
        help='a vector store collection RAG queries may name ({"store": NAME}): STORE is chroma, lancedb, qdrant or '
        "milvus, PATH its folder or Milvus Lite file; the collection is NAME unless ,collection=C follows (also "
        ",text_field=F, ,vector_field=V) (repeatable)",
    )
    add_access_args(serve)
    serve.add_argument(
        "--edge",
        action="store_true",
        help="also serve the edge verify API (/v1/edge/...: laptops draft with `specdraft edge`, this server "
        "verifies); needs --api-key-file",
    )
    from .edge import add_edge_parser

    add_edge_parser(sub)

    from .ask import add_ask_parser
    from .bench import add_bench_parser
    from .datastore import add_datastore_parser
    from .index import add_index_parser

    add_bench_parser(sub)
    add_datastore_parser(sub)
    add_index_parser(sub)
    add_ask_parser(sub)

    sub.add_parser("models", help="list the embedded models and whether they are installed and converted")
    return parser


def _generate(args: argparse.Namespace) -> int:
    from specdraft import GenerationConfig
    from specdraft.apps.model_pool import COMPLETION_OFFERS
    from specdraft.retrieval.drafter_registry import parse_drafter, require

    from .generate import GenerateRequest, json_schema_constraint, run_generate
    from .model_args import model_pool

    constraint = json_schema_constraint(args.json_schema) if args.json_schema else None
    drafter = parse_drafter(args.drafter, args.tree_width, COMPLETION_OFFERS)
    require(drafter, COMPLETION_OFFERS)
    prompt = sys.stdin.read() if args.prompt == "-" else args.prompt
    request = GenerateRequest(
        prompt=prompt,
        model=args.model,
        drafter=drafter,
        config=GenerationConfig(
            max_new_tokens=args.max_new_tokens,
            temperature=args.temperature,
            top_p=args.top_p,
            top_k=args.top_k,
            seed=args.seed,
            stop=tuple(args.stop),
            constraint=constraint,
        ),
        chat=args.chat,
    )
    run_generate(request, model_pool(args), as_json=args.json)
    return 0


def _correct(args: argparse.Namespace) -> int:
    from .correct import read_text, run_correct
    from .model_args import model_pool

    text = read_text(args.text, args.file, sys.stdin)
    run_correct(text, args.model, model_pool(args), speculate=not args.no_speculation, as_json=args.json)
    return 0


def _serve(args: argparse.Namespace) -> int:
    from specdraft.apps.service import create_app
    from specdraft.apps.service.config import ServiceConfig
    from specdraft.apps.service.server import check_bind, serve

    from .model_args import model_config, model_pool
    from .serve_args import access_config
    from .store_args import parse_named_store

    rag = {"index_root": args.index_root, "datastore": args.datastore, "embedding_model": args.embedding_model}
    stores = tuple(parse_named_store(text) for text in args.store)
    config = ServiceConfig(
        stores=stores,
        model=model_config(args),
        drafter=args.drafter,
        extra_models=tuple(args.extra_model),
        model_aliases=tuple(args.model_alias),
        serve_any_model_name=args.serve_any_model_name,
        grammar_model=args.grammar_model,
        edge=args.edge,
        **{name: value for name, value in rag.items() if value is not None},
        **access_config(args),
    )
    check_bind(args.host, config)  # before loading anything
    app = create_app(config, pool=model_pool(args))
    if not args.lazy:
        print(f"loading {args.model} ...", file=sys.stderr)
        app.extensions["specdraft"].target()
    print(
        f"specdraft serving {args.model} (backend {config.model.resolved_backend}) on "
        f"http://{args.host}:{args.port}\n  demos: http://{args.host}:{args.port}/demo/grammar  "
        f"http://{args.host}:{args.port}/demo/rag\n  grammar corrections by {config.grammar_model} (loaded on the "
        "first one)\n  APIs: POST /v1/completions, /v1/chat/completions, /v1/grammar/correct, /v1/rag/documents, "
        f"/v1/rag/query; GET /healthz\n  RAG indexes in {config.index_root}"
        + (f", datastore {config.datastore}" if config.datastore else "")
        + "\n"
        + (
            f"  API keys required ({args.api_key_file})"
            if config.api_key_file
            else "  no API keys: answering this machine only (loopback); --api-key-file FILE to serve others"
        )
        + f"\n  limits: {config.limits.max_concurrent} generations at once, {config.limits.max_queue} queued, "
        f"{config.limits.request_timeout_s:g} s each"
        + (
            f"\n  verify batching: up to {config.batch_verify.max_batch} requests per pass, window "
            f"{config.batch_verify.window_ms:g} ms"
            if config.batch_verify
            else ""
        ),
        file=sys.stderr,
    )
    serve(app, config, args.host, args.port)
    return 0


def _edge(args: argparse.Namespace) -> int:
    from .edge import run_edge

    return run_edge(args)


def _ask(args: argparse.Namespace) -> int:
    from .ask import request_from_args, run_ask
    from .model_args import model_pool

    run_ask(request_from_args(args, sys.stdin), model_pool(args), as_json=args.json)
    return 0


def _models(args: argparse.Namespace) -> int:
    from specdraft.models import list_models

    for row in list_models():
        flags = ("installed" if row["installed"] else "not installed") + (", converted" if row["cached"] else "")
        print(f"{row['name']:<22} {flags:<26} {row['description']}")
    return 0


def _bench(args: argparse.Namespace) -> int:
    from .bench import run_bench

    return run_bench(args)


def _datastore(args: argparse.Namespace) -> int:
    from .datastore import run_datastore

    return run_datastore(args)


def _index(args: argparse.Namespace) -> int:
    from .index import run_index

    return run_index(args)


HANDLERS = {
    "generate": _generate,
    "correct": _correct,
    "serve": _serve,
    "edge": _edge,
    "bench": _bench,
    "index": _index,
    "ask": _ask,
    "datastore": _datastore,
    "models": _models,
}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler = HANDLERS[args.command]
    try:
        return handler(args)
    except (ValueError, RuntimeError, OSError) as error:  # bad input, a missing model or file: say what, no traceback
        print(f"specdraft: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

"""``specdraft edge``: generate on this machine's small model, verified by a ``specdraft serve --edge`` server.

The draft model (``--draft-model``: a registry name or a GGUF path, on llama.cpp by default) must
share the served model's tokenizer. The text streams as it is verified; with ``--json`` one object
``{"text", "token_ids", "prompt_token_ids", "verified", "finish_reason", "stats"}`` is printed instead
(``stats``: ``round_trips``, ``server_forward_passes``, ``unverified_tokens``, ...). When the server
cannot be reached the text goes on from the local model; those tokens are marked unverified
(``verified`` false, and on a terminal shown dim).
"""

from __future__ import annotations

import argparse
import json
import sys

DEFAULT_DRAFT_MODEL = "smollm2-135m"


def add_edge_parser(sub: argparse._SubParsersAction) -> None:
    from specdraft.edge.client import EdgeClientConfig

    defaults = EdgeClientConfig()
    edge = sub.add_parser("edge", help="draft on this machine, verify on a `serve --edge` server (survives losing it)",
                          description="Generate text for PROMPT: a small local model drafts, the server's model verifies "
                          "(its own output, exactly); unverified text when the server is unreachable.")
    edge.add_argument("prompt", metavar="PROMPT", help="the prompt text, or - to read it from standard input")
    edge.add_argument("--server", required=True, metavar="URL", help="the verify server, e.g. http://gpu-box:8000")
    edge.add_argument("--key", required=True, metavar="KEY", help="an API key of the server's --api-key-file")
    edge.add_argument("--draft-model", default=DEFAULT_DRAFT_MODEL, metavar="NAME", help="local draft model: registry name or .gguf path sharing the server model's tokenizer (default: %(default)s)")
    edge.add_argument("--backend", default="llama-cpp", choices=("llama-cpp", "transformers", "auto"), help="backend of the local model (default: %(default)s)")
    edge.add_argument("--max-new-tokens", type=int, default=128, help="most tokens to generate (default: %(default)s)")
    edge.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (default); > 0 samples (the server draws)")
    edge.add_argument("--seed", type=int, default=None, help="seed for reproducible sampling")
    edge.add_argument("--chat", action="store_true", help="wrap PROMPT in the chat template as a user message")
    edge.add_argument("--max-draft-nodes", type=int, default=defaults.max_draft_nodes, help="draft nodes per verification (default: %(default)s)")
    edge.add_argument("--no-pipeline", action="store_true", help="wait for each verification instead of drafting on")
    edge.add_argument("--no-adaptive", action="store_true", help="always draft --max-draft-nodes (no confidence trigger)")
    edge.add_argument("--timeout", type=float, default=10.0, help="seconds one server call may take before it counts as lost (default: %(default)s)")
    edge.add_argument("--json", action="store_true", help='print one JSON object {"text", "token_ids", "prompt_token_ids", "verified", "stats"}')


def run_edge(args: argparse.Namespace) -> int:
    from specdraft import GenerationConfig, ModelConfig, load_model
    from specdraft.edge import EdgeConnection, EdgeRefused, TransportConfig
    from specdraft.edge.client import EdgeClient, EdgeClientConfig

    prompt = sys.stdin.read() if args.prompt == "-" else args.prompt
    model = load_model(ModelConfig(args.draft_model, "cpu", "auto", args.backend, 0))
    ids = model.encode_chat([{"role": "user", "content": prompt}]) if args.chat else model.encode(prompt)
    config = EdgeClientConfig(max_draft_nodes=args.max_draft_nodes, pipeline=not args.no_pipeline, adaptive=not args.no_adaptive)
    generation = GenerationConfig(max_new_tokens=args.max_new_tokens, temperature=args.temperature, seed=args.seed)
    with EdgeConnection(args.server, args.key, TransportConfig(timeout_s=args.timeout)) as connection:
        run = EdgeClient(connection, model, config).stream(ids, generation)
        dim = sys.stdout.isatty()
        try:
            for piece in run.steps():
                if not args.json:
                    text = f"\x1b[2m{piece.text}\x1b[0m" if dim and piece.source == "unverified" else piece.text
                    sys.stdout.write(text)
                    sys.stdout.flush()
        except EdgeRefused as error:
            raise ValueError(f"the server refused: {error.message}") from None
        result = run.result()
    if args.json:
        print(json.dumps({"text": result.text, "token_ids": result.token_ids, "prompt_token_ids": result.prompt_token_ids,
                          "verified": result.verified, "finish_reason": result.finish_reason, "stats": result.stats}))
    else:
        print()
        if result.stats["unverified_tokens"]:
            print(f"[{result.stats['unverified_tokens']} tokens unverified: the server was unreachable]", file=sys.stderr)
    return 0

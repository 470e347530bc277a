"""``specdraft edge``: generate on this machine's small model, verified by a ``specdraft serve --edge`` server.

The draft model (``--draft-model``: a registry name or a GGUF path, on llama.cpp by default) must
share the served model's tokenizer. The text streams as it is verified; with ``--json`` one object
``{"text", "token_ids", "prompt_token_ids", "verified", "finish_reason", "stats"}`` is printed instead
(``stats``: ``round_trips``, ``server_forward_passes``, ``unverified_tokens``, ...). When the server
cannot be reached the text goes on from the local model; those tokens are marked unverified
(``verified`` false, and on a terminal shown dim).

Without PROMPT, ``--chat`` (or ``--interactive``) holds a conversation read from standard input, one
turn a line (``edge_chat``). ``specdraft edge serve ...`` starts an OpenAI-compatible endpoint on this
machine instead (``edge_serve``): ``_EdgeParser`` hands the arguments after ``serve`` to its parser.
"""

from __future__ import annotations

import argparse
import json
import sys

DEFAULT_DRAFT_MODEL = "smollm2-135m"


class _EdgeParser(argparse.ArgumentParser):
    """The ``edge`` parser: ``edge serve ...`` goes to ``serve_parser``, anything else is a prompt run."""

    serve_parser: argparse.ArgumentParser | None = None

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        if args and args[0] == "serve" and self.serve_parser is not None:
            parsed, rest = self.serve_parser.parse_known_args(args[1:], namespace)
            parsed.edge_command = "serve"
            return parsed, rest
        return super().parse_known_args(args, namespace)


def add_client_args(parser: argparse.ArgumentParser) -> None:
    """The options the prompt run, the chat and ``edge serve`` share: server, key, local model, drafting."""
    from specdraft.edge.config import EdgeClientConfig

    defaults = EdgeClientConfig()
    parser.add_argument("--server", required=True, metavar="URL", help="the verify server, e.g. http://gpu-box:8000")
    parser.add_argument("--key", required=True, metavar="KEY", help="an API key of the server's --api-key-file")
    parser.add_argument(
        "--draft-model",
        default=DEFAULT_DRAFT_MODEL,
        metavar="NAME",
        help="local draft model: registry name or .gguf path sharing the server model's tokenizer (default: "
        "%(default)s)",
    )
    parser.add_argument(
        "--backend",
        default="llama-cpp",
        choices=("llama-cpp", "transformers", "auto"),
        help="backend of the local model (default: %(default)s)",
    )
    parser.add_argument(
        "--max-draft-nodes",
        type=int,
        default=defaults.max_draft_nodes,
        help="draft nodes per verification (default: %(default)s)",
    )
    parser.add_argument("--no-pipeline", action="store_true", help="wait for each verification instead of drafting on")
    parser.add_argument(
        "--no-adaptive", action="store_true", help="always draft --max-draft-nodes (no confidence trigger)"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        help="seconds one server call may take before it counts as lost (default: %(default)s)",
    )


def client_config(args: argparse.Namespace):
    """The ``EdgeClientConfig`` of the shared options."""
    from specdraft.edge.config import EdgeClientConfig

    return EdgeClientConfig(
        max_draft_nodes=args.max_draft_nodes, pipeline=not args.no_pipeline, adaptive=not args.no_adaptive
    )


def load_draft_model(args: argparse.Namespace):
    from specdraft import ModelConfig, load_model

    return load_model(ModelConfig(args.draft_model, "cpu", "auto", args.backend, 0))


def add_edge_parser(sub: argparse._SubParsersAction) -> None:
    from specdraft import GenerationConfig

    from .edge_serve import build_serve_parser

    edge = sub.add_parser(
        "edge",
        help="draft on this machine, verify on a `serve --edge` server (survives losing it)",
        description="Generate text for PROMPT: a small local model drafts, the server's model verifies "
        "(its own output, exactly); unverified text when the server is unreachable. Without PROMPT, "
        "--chat (or --interactive) reads a conversation from standard input, one turn a line; /exit or "
        "end of input ends it.",
        epilog="`specdraft edge serve --server URL --key KEY [--port N]` starts an OpenAI-compatible endpoint "
        "and a demo page on this machine instead (see `specdraft edge serve --help`).",
    )
    edge.__class__ = _EdgeParser
    edge.serve_parser = build_serve_parser(add_client_args)
    edge.add_argument(
        "prompt",
        metavar="PROMPT",
        nargs="?",
        help="the prompt text, or - to read it from standard input; none with --chat/--interactive: a conversation",
    )
    add_client_args(edge)
    edge.add_argument(
        "--max-new-tokens",
        type=int,
        default=GenerationConfig().max_new_tokens,
        help="most tokens to generate (per turn in a chat) (default: %(default)s)",
    )
    edge.add_argument(
        "--temperature", type=float, default=0.0, help="0 = greedy (default); > 0 samples (the server draws)"
    )
    edge.add_argument("--seed", type=int, default=None, help="seed for reproducible sampling")
    edge.add_argument(
        "--chat",
        action="store_true",
        help="wrap PROMPT in the chat template as a user message; without PROMPT: an interactive chat",
    )
    edge.add_argument(
        "--interactive", action="store_true", help="an interactive chat on standard input (as --chat without PROMPT)"
    )
    edge.add_argument("--system", default=None, metavar="TEXT", help="a system message opening the chat")
    edge.add_argument(
        "--json",
        action="store_true",
        help='print one JSON object {"text", "token_ids", "prompt_token_ids", "verified", "stats"} (in a chat: one '
        "per turn)",
    )


def run_edge(args: argparse.Namespace) -> int:
    if getattr(args, "edge_command", None) == "serve":
        from .edge_serve import run_edge_serve

        return run_edge_serve(args, client_config)
    if args.prompt is None or args.interactive:
        if args.prompt is not None:
            raise ValueError("--interactive reads the conversation from standard input: give no PROMPT")
        if not (args.chat or args.interactive):
            raise ValueError("give a PROMPT, or --chat (--interactive) for a conversation on standard input")
        from .edge_chat import run_chat

        return run_chat(args, load_draft_model(args), client_config(args))
    from specdraft import GenerationConfig
    from specdraft.edge import EdgeConnection, EdgeRefused, TransportConfig
    from specdraft.edge.client import EdgeClient

    prompt = sys.stdin.read() if args.prompt == "-" else args.prompt
    model = load_draft_model(args)
    messages = ([{"role": "system", "content": args.system}] if args.system else []) + [
        {"role": "user", "content": prompt}
    ]
    ids = model.encode_chat(messages) if args.chat else model.encode(prompt)
    config = client_config(args)
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
        print(
            json.dumps(
                {
                    "text": result.text,
                    "token_ids": result.token_ids,
                    "prompt_token_ids": result.prompt_token_ids,
                    "verified": result.verified,
                    "finish_reason": result.finish_reason,
                    "stats": result.stats.to_dict(),
                }
            )
        )
    else:
        print()
        if result.stats.unverified_tokens:
            print(f"[{result.stats.unverified_tokens} tokens unverified: the server was unreachable]", file=sys.stderr)
    return 0

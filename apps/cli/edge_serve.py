"""``specdraft edge serve``: the OpenAI-compatible endpoint on the laptop: the service
(``specdraft.apps.service``) serving an edge model (``specdraft.apps.service.edge_model.endpoint_config``:
the local model drafts, the verify server verifies).

Loads the local draft model (``load_model`` on the edge backend), asks the verify server for its info
once (a refused key or another tokenizer stops here with a clear error; an unreachable server is a
warning: the endpoint starts and its text is unverified until the server answers), then serves with
waitress. Without ``--api-key-file`` it listens on loopback addresses only (a non-loopback ``--host``
is refused).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

DEFAULT_PORT = 8100


def build_serve_parser(add_client_args: Callable[[argparse.ArgumentParser], None]) -> argparse.ArgumentParser:
    from specdraft.apps.service.config import ServiceConfig
    from specdraft.apps.service.server import DEFAULT_HOST

    defaults = ServiceConfig()
    parser = argparse.ArgumentParser(
        prog="specdraft edge serve",
        description="Serve an OpenAI-compatible API on this machine (POST /v1/chat/completions, POST /v1/completions, "
        "GET /v1/models, GET /healthz) and a demo page (GET /demo/): the local model drafts, the verify server's model "
        "verifies. Answers carry a speculation object (round_trips, server_forward_passes, unverified_tokens).",
    )
    add_client_args(parser)
    parser.add_argument(
        "--host", default=DEFAULT_HOST, help="address to listen on (default: %(default)s; others need --api-key-file)"
    )
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (default: %(default)s)")
    parser.add_argument(
        "--api-key-file",
        default=None,
        metavar="FILE",
        help="API keys this endpoint asks its own clients for (one a line); needed to listen on a non-loopback --host",
    )
    parser.add_argument(
        "--max-tokens-limit",
        type=int,
        default=defaults.max_tokens_limit,
        help="the largest max_tokens a request may ask for (default: %(default)s)",
    )
    parser.add_argument(
        "--default-max-tokens",
        type=int,
        default=defaults.default_max_tokens,
        help="max_tokens of a request that sends none (default: %(default)s)",
    )
    parser.add_argument(
        "--threads", type=int, default=8, help="waitress threads (generations run one at a time) (default: %(default)s)"
    )
    return parser


def run_edge_serve(args: argparse.Namespace, client_config: Callable[[argparse.Namespace], Any]) -> int:
    from waitress import serve

    from specdraft.apps.service import create_app
    from specdraft.apps.service.edge_model import endpoint_config
    from specdraft.apps.service.server import is_loopback
    from specdraft.apps.service.state import EXTENSION
    from specdraft.edge import EdgeRefused

    if args.api_key_file is None and not is_loopback(args.host):
        raise ValueError(
            f"refusing to listen on {args.host} without API keys: other machines could use your server key; "
            "give --api-key-file FILE, or listen on 127.0.0.1"
        )
    config = endpoint_config(
        args.server,
        args.key,
        args.draft_model,
        local_backend=args.backend,
        timeout_s=args.timeout,
        client=client_config(args),
        max_tokens_limit=args.max_tokens_limit,
        default_max_tokens=args.default_max_tokens,
        api_key_file=args.api_key_file,
    )
    app = create_app(config)
    print(f"loading {args.draft_model} ...", file=sys.stderr)
    state = app.extensions[EXTENSION]
    model = state.target()  # the EdgeModel: the local model loaded, no server contacted yet
    try:
        info = model.info()
    except EdgeRefused as error:
        raise ValueError(f"the verify server {args.server} refused: {error.message}") from None
    if info is None:
        print(
            f"warning: the verify server {args.server} does not answer; answers are unverified until it does",
            file=sys.stderr,
        )
    elif info["tokenizer"] != model.tokenizer.fingerprint():
        raise ValueError(
            f"the draft model {args.draft_model} does not share the server model {info['model']!r}'s tokenizer"
        )
    name = info["model"] if info else args.draft_model
    url = f"http://{args.host}:{args.port}"
    print(
        f"specdraft edge serving {name} (verified by {args.server}, drafted by {args.draft_model}) on "
        f"{url}\n  APIs: POST /v1/chat/completions, /v1/completions; GET /v1/models, /healthz\n  demo: {url}/demo/",
        file=sys.stderr,
        flush=True,
    )
    serve(app, host=args.host, port=args.port, threads=args.threads)
    return 0

"""``specdraft serve``'s access and load flags: API keys, allowed origins and hosts, limits.

Defaults come from ``LimitConfig``, ``VerifyBatchConfig`` and ``ServiceConfig`` (each defined once there).
"""

from __future__ import annotations

import argparse
from typing import Any

from specdraft.apps.service.limits import LimitConfig
from specdraft.backends.transformers.verify_batch_config import VerifyBatchConfig

_LIMITS = LimitConfig()
_BATCH = VerifyBatchConfig()


def add_access_args(parser: argparse.ArgumentParser) -> None:
    access = parser.add_argument_group("access (see docs/deployment.md: Keys, access and limits)")
    access.add_argument(
        "--api-key-file",
        metavar="FILE",
        default=None,
        help="API keys, one per line, each followed by its scope 'read' (default) or 'write' (adding documents needs "
        "write). Without keys the server listens on loopback only and refuses other --host values",
    )
    access.add_argument(
        "--allowed-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="another origin (scheme://host[:port]) whose web pages may send requests to this server (repeatable; the "
        "server's own pages always may)",
    )
    access.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="another Host name accepted without keys, e.g. a local reverse proxy's (repeatable; default: localhost, "
        "127.0.0.1, [::1])",
    )
    limits = parser.add_argument_group("limits")
    limits.add_argument(
        "--max-concurrent",
        type=int,
        default=None,
        metavar="N",
        help=f"generations running at once (default: {_LIMITS.max_concurrent}; with --batch-verify: --batch-max)",
    )
    limits.add_argument(
        "--max-queue",
        type=int,
        default=_LIMITS.max_queue,
        metavar="N",
        help="requests waiting for a place; more get 429 with Retry-After (default: %(default)s)",
    )
    limits.add_argument(
        "--queue-timeout",
        type=float,
        default=_LIMITS.queue_timeout_s,
        metavar="S",
        help="seconds a request waits for a place before a 429 (default: %(default)s)",
    )
    limits.add_argument(
        "--request-timeout",
        type=float,
        default=_LIMITS.request_timeout_s,
        metavar="S",
        help="seconds a generation may run; then it ends with what it has (default: %(default)s)",
    )
    batching = parser.add_argument_group(
        "verify batching (opt-in; see docs/deployment.md: Batching verify passes across requests)"
    )
    batching.add_argument(
        "--batch-verify",
        action="store_true",
        help="transformers: verify concurrent requests' drafts in one padded forward pass (float32 may round "
        "differently from a lone pass: see docs/deployment.md)",
    )
    batching.add_argument(
        "--batch-window-ms",
        type=float,
        default=_BATCH.window_ms,
        metavar="MS",
        help="with --batch-verify: how long a pass waits for other requests' passes (default: %(default)s)",
    )
    batching.add_argument(
        "--batch-max",
        type=int,
        default=_BATCH.max_batch,
        metavar="N",
        help="with --batch-verify: most requests in one pass (default: %(default)s)",
    )


def access_config(args: argparse.Namespace) -> dict[str, Any]:
    """The ``ServiceConfig`` fields these flags set."""
    return {
        "api_key_file": args.api_key_file,
        "allowed_origins": tuple(origin.rstrip("/") for origin in args.allowed_origin),
        "allowed_hosts": tuple(host.lower() for host in args.allowed_host),
        "limits": LimitConfig(_max_concurrent(args), args.max_queue, args.queue_timeout, args.request_timeout),
        "batch_verify": VerifyBatchConfig(args.batch_window_ms, args.batch_max) if args.batch_verify else None,
    }


def _max_concurrent(args: argparse.Namespace) -> int:
    """--max-concurrent, else the default; with --batch-verify, else --batch-max (a batch can only hold
    requests that the gate lets generate at the same time)."""
    if args.max_concurrent is not None:
        return args.max_concurrent
    return args.batch_max if args.batch_verify else _LIMITS.max_concurrent

"""``specdraft serve``'s access and load flags: API keys, allowed origins and hosts, limits.

Defaults come from ``LimitConfig`` and ``ServiceConfig`` (each defined once there).
"""

from __future__ import annotations

import argparse
from typing import Any

from specdraft.apps.service.limits import LimitConfig

_LIMITS = LimitConfig()


def add_access_args(parser: argparse.ArgumentParser) -> None:
    access = parser.add_argument_group("access (see README: Keys and limits)")
    access.add_argument("--api-key-file", metavar="FILE", default=None, help="API keys, one per line, each followed by its scope 'read' (default) or 'write' (adding documents needs write). Without keys the server listens on loopback only and refuses other --host values")
    access.add_argument("--allowed-origin", action="append", default=[], metavar="ORIGIN", help="another origin (scheme://host[:port]) whose web pages may send requests to this server (repeatable; the server's own pages always may)")
    access.add_argument("--allowed-host", action="append", default=[], metavar="NAME", help="another Host name accepted without keys, e.g. a local reverse proxy's (repeatable; default: localhost, 127.0.0.1, [::1])")
    limits = parser.add_argument_group("limits")
    limits.add_argument("--max-concurrent", type=int, default=_LIMITS.max_concurrent, metavar="N", help="generations running at once (default: %(default)s)")
    limits.add_argument("--max-queue", type=int, default=_LIMITS.max_queue, metavar="N", help="requests waiting for a place; more get 429 with Retry-After (default: %(default)s)")
    limits.add_argument("--queue-timeout", type=float, default=_LIMITS.queue_timeout_s, metavar="S", help="seconds a request waits for a place before a 429 (default: %(default)s)")
    limits.add_argument("--request-timeout", type=float, default=_LIMITS.request_timeout_s, metavar="S", help="seconds a generation may run; then it ends with what it has (default: %(default)s)")


def access_config(args: argparse.Namespace) -> dict[str, Any]:
    """The ``ServiceConfig`` fields these flags set."""
    return {
        "api_key_file": args.api_key_file,
        "allowed_origins": tuple(origin.rstrip("/") for origin in args.allowed_origin),
        "allowed_hosts": tuple(host.lower() for host in args.allowed_host),
        "limits": LimitConfig(args.max_concurrent, args.max_queue, args.queue_timeout, args.request_timeout),
    }

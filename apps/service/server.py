"""Running the service: waitress, a production WSGI server, threads in one process.

One process, so the model is loaded once and shared; ``LimitConfig.server_threads`` threads, so
that every admitted or queued generation has one and health checks, metrics and 429s are answered
while they run. waitress reads requests ahead (``channel_request_lookahead``), which lets a
request notice that its client has gone (``limits.RequestGuard``).

Without API keys the server must listen on a loopback address only: ``check_bind`` refuses any
other address with a message saying how to add keys.
"""

from __future__ import annotations

import ipaddress
import logging
from typing import Any

from flask import Flask

from .config import ServiceConfig

LOOPBACK_NAMES = frozenset({"localhost"})
DEFAULT_HOST = "127.0.0.1"  # `specdraft serve`'s address: this machine only (no keys needed)
DEFAULT_PORT = 8000


class UnsafeBind(ValueError):
    """Serving an address other machines can reach, without API keys."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or address) is this machine only."""
    host = host.strip("[]").lower()
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, config: ServiceConfig) -> None:
    """Raise ``UnsafeBind`` when ``host`` is reachable from other machines and no keys are configured."""
    if config.api_key_file is None and not is_loopback(host):
        raise UnsafeBind(
            f"refusing to listen on {host!r} without API keys: anyone who can reach this address could use the "
            "model and write into the RAG indexes. Give --api-key-file FILE (one key per line, then 'read' or "
            f"'write'), or listen on {DEFAULT_HOST} (the default)."
        )


def serve(app: Flask, config: ServiceConfig, host: str, port: int) -> None:
    """Serve ``app`` on ``host:port`` until interrupted (after ``check_bind``)."""
    from waitress import serve as waitress_serve

    check_bind(host, config)
    logging.getLogger("waitress.queue").setLevel(logging.ERROR)  # our gate queues; waitress's queue warnings mislead
    waitress_serve(app, host=host, port=port, **waitress_options(config))


def waitress_options(config: ServiceConfig) -> dict[str, Any]:
    """waitress's settings for ``config`` (also used by the tests' live server)."""
    return {
        "threads": config.limits.server_threads,
        "channel_request_lookahead": 1,  # lets a request see that its client has gone
        "max_request_body_size": config.max_request_bytes + 65536,  # Flask answers the 413 (as JSON) first
        "ident": "specdraft",
        "clear_untrusted_proxy_headers": True,
    }

"""The load test's server (``benchmarks/load.py``, step 1 of its module doc): ``started_server`` yields a
``Client`` for it, its process id (for its memory) and the description the report gives: a server at
``--url`` (loopback only), or a ``specdraft serve`` started here on loopback with a fresh index root
and a key file holding one write key, in a temporary folder removed afterwards."""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import tempfile
import urllib.parse
from pathlib import Path
from typing import Sequence

from benchmarks.load_client import Client, check_loopback, listening_pid
from specdraft.apps.bench.datasets.archive_cache import say

ENVIRONMENT_SHOWN = ("MALLOC_", "OMP_", "MKL_", "LD_PRELOAD")  # variables named in the report's server line


@contextlib.contextmanager
def started_server(args: argparse.Namespace):
    """``(client, pid, description)`` for ``--url``, or for a ``specdraft serve`` started here."""
    if args.url:
        if getattr(args, "batch_verify", False):
            raise ValueError("--batch-verify starts the server with it; a server at --url has its own settings")
        url = check_loopback(args.url)
        pid = args.server_pid or listening_pid(urllib.parse.urlsplit(url).port or 80)
        yield Client(url, args.key, args.request_timeout), pid, url
        return
    from benchmarks.http_rag import Server

    with tempfile.TemporaryDirectory(prefix="specdraft-load-") as folder:
        key = "load-" + secrets.token_urlsafe(24)
        keys = Path(folder) / "keys"
        keys.write_text(f"{key} write\n")
        serve_args = [
            "--model",
            args.model,
            "--grammar-model",
            args.grammar_model or args.model,
            "--device",
            args.device,
            "--dtype",
            args.dtype,
            "--backend",
            args.backend,
            "--index-root",
            str(Path(folder) / "indexes"),
            *args.serve_arg,
            *(["--batch-verify"] if getattr(args, "batch_verify", False) else []),
        ]
        log = Path(folder) / "serve.log"
        say(f"starting specdraft serve {' '.join(serve_args)} ...")
        try:
            with Server([*serve_args, "--api-key-file", str(keys)], log) as server:
                yield Client(server.url, key, args.request_timeout), server._process.pid, _described(serve_args)
        except (RuntimeError, TimeoutError) as error:  # the log goes with the folder: say what it ended with
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"{error}\nthe server's log ended with:\n{tail}") from None


def _described(serve_args: Sequence[str]) -> str:
    """The server's command line, after the settings of its environment that change its memory or
    threads (it inherits this process's environment)."""
    settings = [f"{name}={value}" for name, value in sorted(os.environ.items()) if name.startswith(ENVIRONMENT_SHOWN)]
    return " ".join([*settings, "specdraft serve", *serve_args])

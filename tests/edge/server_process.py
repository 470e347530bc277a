"""Starting an edge verify server in its own process for the fault tests, and waiting until it answers."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))


def start_server_process(script: str, port: int, *args: str) -> subprocess.Popen:
    """Run ``script`` (a file beside this one) with ``port`` and ``args``; return once /healthz answers."""
    process = subprocess.Popen(
        [sys.executable, os.path.join(HERE, script), str(port), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2).read()
            return process
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError("the edge server process did not start")
            time.sleep(0.2)

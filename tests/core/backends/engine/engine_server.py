"""Starts llama-cpp-python's OpenAI-compatible server (``python -m llama_cpp.server``) on loopback
for the tests: a real engine in its own process, serving a GGUF file."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class LlamaServer:
    """``with LlamaServer(gguf) as server: server.url``, llama-cpp-python's own server on the installed
    (patched) build, in the environment specdraft's llama.cpp backend runs in."""

    def __init__(self, gguf: str | Path, context: int = 1024, startup_s: float = 180.0) -> None:
        self.gguf = str(gguf)
        self.context = context
        self.startup_s = startup_s
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> "LlamaServer":
        env = dict(os.environ)
        command = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            self.gguf,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.context),
            "--verbose",
            "False",
        ]
        self.process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + self.startup_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the llama-cpp-python server exited: {self.process.stderr.read().decode()[-2000:]}")
            try:
                urllib.request.urlopen(self.url + "/v1/models", timeout=5).read()
                return self
            except OSError:
                time.sleep(0.5)
        self.__exit__()
        raise RuntimeError(f"the llama-cpp-python server did not start within {self.startup_s:.0f} s")

    def complete(self, prompt: str, max_tokens: int) -> dict:
        """The engine's own greedy completion of ``prompt`` (its first choice)."""
        body = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0.0, "repeat_penalty": 1.0}
        request = urllib.request.Request(
            self.url + "/v1/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=600) as response:
            return json.loads(response.read())["choices"][0]

    def __exit__(self, *exc) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process.stderr.close()
            self.process = None

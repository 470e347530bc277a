"""``specdraft bench edge``: a laptop client and a verify server as separate processes on this machine,
behind a delaying TCP proxy (``delay_proxy``) adding 0, 20 and 80 ms round trip.

The server is ``specdraft serve --edge`` started as a subprocess (this package never imports the
service). For every prompt set, added delay and prompt, one run compares, all measured at the client:

- ``server-only``: the server generating alone (``POST /v1/completions``, drafter none, streamed
  through the proxy): what a laptop user runs today;
- ``local-only``: the laptop's model alone (plain greedy decoding in this process; no network, so run
  once per set, not per delay);
- ``edge``, ``edge no-pipeline``, ``edge no-adaptive``, ``edge no-pipeline no-adaptive``: the
  ``EdgeClient`` drafting on the laptop's model, the server verifying.

Reported per (set, delay, method): tokens/s at the client (generated tokens / wall time from sending
the request to the last token, prefill included), server forward passes per generated token (the
server's cost: ``target_forward_passes`` of the completion, the edge sessions' ``forward_passes``),
verified tokens per round trip (edge) and the identical-output rate: the share of prompts whose text
equals the server-only greedy text. ``results.json`` (every measurement), ``results.md`` and
``results.png`` go to the output folder.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from specdraft import ModelConfig, load_model

from .delay_proxy import DelayProxy, ProxyConfig
from .edge_methods import EDGE_VARIANTS, EdgeCase, EdgeMeasurement, edge, forget_calibrations, local_only, server_only


@dataclass(frozen=True)
class EdgeBenchConfig:
    """``server_model``/``server_backend``/``server_dtype``/``server_device``: what ``serve --edge``
    runs; ``draft_model``/``draft_backend``: the laptop's model (sharing the server model's
    tokenizer); ``delays_ms``: added round trips; ``max_draft_nodes``: per verification."""

    server_model: str = "qwen2.5-coder-1.5b"
    server_backend: str = "llama-cpp"
    server_dtype: str = "auto"
    server_device: str = "cpu"
    draft_model: str = "qwen2.5-coder-0.5b"
    draft_backend: str = "llama-cpp"
    sets: tuple[str, ...] = ("chat", "grammar-sentences")
    limit: int = 6
    seed: int = 0
    max_new_tokens: int = 64
    delays_ms: tuple[int, ...] = (0, 20, 80)
    max_draft_nodes: int = 16
    timeout_s: float = 300.0
    server_start_s: float = 600.0

    def __post_init__(self) -> None:
        if self.limit < 1 or self.max_new_tokens < 1 or not self.delays_ms or min(self.delays_ms) < 0:
            raise ValueError("need limit >= 1, max_new_tokens >= 1 and at least one delay >= 0")


@dataclass
class EdgeBenchResult:
    config: dict
    environment: dict
    rows: list[dict]
    measurements: list[EdgeMeasurement] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "config": self.config,
            "environment": self.environment,
            "rows": self.rows,
            "measurements": [asdict(m) for m in self.measurements],
        }


# --- the server process ------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(config: EdgeBenchConfig, port: int, key_file: str, log_path: str | None = None) -> subprocess.Popen:
    """``specdraft serve --edge`` in its own process, returned once ``/healthz`` answers."""
    command = [
        sys.executable,
        "-m",
        "specdraft.apps.cli",
        "serve",
        "--edge",
        "--api-key-file",
        key_file,
        "--model",
        config.server_model,
        "--backend",
        config.server_backend,
        "--dtype",
        config.server_dtype,
        "--device",
        config.server_device,
        "--drafter",
        "none",
        "--port",
        str(port),
        "--no-prefix-cache",
    ]  # every method pays its own prompt, as a new prompt would: no run warms another
    if log_path:
        with open(log_path, "ab") as log:  # the child keeps its own copy of the descriptor
            process = subprocess.Popen(command, stdout=log, stderr=log)
    else:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + config.server_start_s
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5).read()
            return process
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(
                    f"the edge server did not start: {' '.join(command)}" + (f" (log: {log_path})" if log_path else "")
                )
            time.sleep(0.5)


def _exit_on_sigterm():
    """SIGTERM raises SystemExit (so ``finally`` blocks run); the previous handler, None off the main thread."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


def stop_server(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# --- the cases -----------------------------------------------------------------------------------------
def load_cases(model, config: EdgeBenchConfig) -> list[EdgeCase]:
    """``config.limit`` prompts of each set: prompt sets (``datasets``) as chat messages in the model's
    template; grammar sets (``grammar_data``) as the grammar corrector's prompts. At most
    ``max_new_tokens`` new tokens each."""
    from .datasets import PROMPT_SETS, load_prompt_set
    from .datasets.grammar_data import GRAMMAR_SETS

    cases = []
    for name in config.sets:
        if name in GRAMMAR_SETS:
            from specdraft.copydraft.corrector import INSTRUCTION
            from specdraft.copydraft.editor import Editor

            editor = Editor(model)
            for item in GRAMMAR_SETS[name](limit=config.limit, seed=config.seed):
                prompt_ids, _, max_new = editor.prepare(INSTRUCTION, item.source)
                cases.append(EdgeCase(name, item.id, tuple(prompt_ids), min(max_new, config.max_new_tokens)))
        elif name in PROMPT_SETS:
            for prompt in load_prompt_set(name, limit=config.limit, seed=config.seed):
                ids = (
                    model.encode_chat(prompt.messages)
                    if model.has_chat_template
                    else model.encode(prompt.messages[-1]["content"])
                )
                cases.append(EdgeCase(name, prompt.id, tuple(ids), config.max_new_tokens))
        else:
            raise ValueError(f"unknown prompt set {name!r}: one of {sorted(PROMPT_SETS) + sorted(GRAMMAR_SETS)}")
    return cases


# --- the run ---------------------------------------------------------------------------------------------
def run_edge_bench(
    config: EdgeBenchConfig,
    cases: Sequence[EdgeCase] | None = None,
    log_path: str | None = None,
    progress=lambda message: print(message, file=sys.stderr, flush=True),
) -> EdgeBenchResult:
    """Start the server, run every method on every case at every delay, stop the server."""
    forget_calibrations()
    model = load_model(ModelConfig(config.draft_model, "cpu", "auto", config.draft_backend, 0))
    cases = list(cases) if cases is not None else load_cases(model, config)
    key = "bench-" + secrets.token_hex(16)
    with tempfile.TemporaryDirectory() as folder:
        key_file = os.path.join(folder, "keys")
        Path(key_file).write_text(key + "\n")
        port = free_port()
        progress(f"starting specdraft serve --edge --model {config.server_model} on port {port} ...")
        server = start_server(config, port, key_file, log_path)
        previous = _exit_on_sigterm()  # a bench stopped with kill does not leave its server running
        try:
            measurements = _measure(config, cases, model, port, key, progress)
        finally:
            stop_server(server)
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
    from .runner import environment

    env = environment()
    env["draft_backend"], env["server_backend"] = config.draft_backend, config.server_backend
    return EdgeBenchResult(asdict(config), env, summarize(measurements), measurements)


def _measure(
    config: EdgeBenchConfig, cases: list[EdgeCase], model, port: int, key: str, progress
) -> list[EdgeMeasurement]:
    # warmed up on a prompt that is not measured, so that no measured method finds its prompt cached
    warm = EdgeCase(
        "warm-up", "warm-up", tuple(model.encode("Say hello in five words.")), min(8, cases[0].max_new_tokens)
    )
    with DelayProxy(port, ProxyConfig(0.0)) as proxy:  # one untimed run of each kind
        server_only(proxy.url, key, config.server_model, warm, 0, config.timeout_s)
        edge(proxy.url, key, model, warm, 0, "edge", config.max_draft_nodes, config.timeout_s)
    local_only(model, warm)
    progress("  warmed up")
    measurements: list[EdgeMeasurement] = []
    reference: dict[tuple[str, str], str] = {}
    for case in cases:
        measurements.append(local_only(model, case))
        progress(f"  local-only: {case.set} {case.id} done")
    for delay in config.delays_ms:
        with DelayProxy(port, ProxyConfig(delay / 1000.0)) as proxy:
            for case in cases:
                m = server_only(proxy.url, key, config.server_model, case, delay, config.timeout_s)
                reference.setdefault((case.set, case.id), m.text)
                measurements.append(m)
                for method in EDGE_VARIANTS:
                    measurements.append(
                        edge(proxy.url, key, model, case, delay, method, config.max_draft_nodes, config.timeout_s)
                    )
                progress(f"  {delay} ms: {case.set} {case.id} done")
    for m in measurements:
        m.identical = m.text == reference[(m.set, m.prompt_id)]
    return measurements


def summarize(measurements: Sequence[EdgeMeasurement]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, int, str], list[EdgeMeasurement]] = {}
    for m in measurements:
        groups.setdefault((m.set, m.delay_ms, m.method), []).append(m)
    rows = []
    for (set_name, delay, method), ms in groups.items():
        tokens = sum(m.generated_tokens for m in ms)
        wall = sum(m.wall_s for m in ms)
        steps = sum(m.verify_steps for m in ms)
        rows.append(
            {
                "set": set_name,
                "delay_ms": delay,
                "method": method,
                "prompts": len(ms),
                "generated_tokens": tokens,
                "wall_s": round(wall, 3),
                "tokens_per_s": round(tokens / wall, 3) if wall else 0.0,
                "server_passes_per_token": round(sum(m.server_forward_passes for m in ms) / max(1, tokens), 4),
                "verified_per_round_trip": round(sum(m.verified_tokens for m in ms) / steps, 3) if steps else None,
                "round_trips": sum(m.round_trips for m in ms),
                "unverified_tokens": sum(m.unverified_tokens for m in ms),
                "identical_rate": round(sum(bool(m.identical) for m in ms) / len(ms), 4),
                "overlap_share": round(sum(m.overlap_s for m in ms) / wall, 3) if wall else 0.0,
                "overlap_emitted_tokens": sum(m.overlap_emitted_tokens for m in ms),
                "side_passes": sum(m.side_passes for m in ms),
            }
        )
    return rows

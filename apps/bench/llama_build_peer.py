"""llama-cpp-python on another build of llama.cpp, as a benchmark method: with the folder of an
unpatched build (``scripts/build_stock_llama.sh``), what a CPU user has without specdraft, timed in the
same run as specdraft's build. Two kinds: ``plain``, its plain generation (:class:`LlamaCppPeer`), and
``constrained``, its schema-constrained chat completion (:class:`LlamaCppChatPeer`, the structured
benchmark's peer).

A process holds one llama.cpp library (llama-cpp-python loads it on first import), so the peer runs in
a worker process started with ``LLAMA_CPP_LIB_PATH`` set to the build's ``llama_cpp/lib`` folder. The
worker loads the GGUF once through the kind's peer class (llama-cpp-python's defaults) and times each
case itself, so the pipe between the processes is not in the wall time. Cases go to it as JSON lines on
its stdin; each answer comes back as one line prefixed ``RESULT_PREFIX`` on its stdout (anything else
the library prints there is skipped). The worker ends when its stdin closes (the benchmark ended).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

from .methods import BenchCase, Measurement

RESULT_PREFIX = "@specdraft-peer "
KINDS = ("plain", "constrained")
STOCK_PEERS = {kind: f"llama-cpp-python(stock build):{kind}" for kind in KINDS}  # their names with --stock-llama-lib
# what a case of each kind carries to the worker (a structured case's constraint and tool format stay here:
# the peer uses llama-cpp-python's own grammar from the schema or tools)
_CASE_FIELDS = {
    "plain": ("id", "prompt_ids", "max_new_tokens"),
    "constrained": ("id", "prompt_ids", "max_new_tokens", "task", "schema", "messages", "tools", "tool_choice"),
}


def lib_folder(path: str | Path) -> Path:
    """``path`` as a folder holding a llama.cpp build's ``libllama``; ValueError (saying what is wanted)
    when it does not."""
    folder = Path(path).expanduser()
    if not any(folder.glob("libllama.*")):
        raise ValueError(
            f"{path}: no libllama in this folder; want the llama_cpp/lib folder of a llama-cpp-python build "
            "(`bash scripts/build_stock_llama.sh` builds an unpatched one and prints its folder)"
        )
    return folder


def _measurement_type(kind: str) -> type[Measurement]:
    if kind == "constrained":
        from .structured_methods import StructuredMeasurement

        return StructuredMeasurement
    return Measurement


class OtherBuildPeer:
    """The ``kind`` peer (module docstring) on the llama.cpp build in ``lib``, in a worker process."""

    def __init__(
        self, name: str, lib: str | Path, model_path: str, context: int, threads: int, kind: str = "plain"
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
        self.name, self.kind = name, kind
        env = dict(os.environ, LLAMA_CPP_LIB_PATH=str(lib_folder(lib)))
        env.pop("GGML_CPU_TILED_MM", None)  # the build's own defaults, as its users get them
        self._worker = subprocess.Popen(
            [sys.executable, "-m", __name__, kind, model_path, str(context), str(threads)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self._read()  # the worker answers once it has loaded the model

    def _read(self) -> dict:
        assert self._worker.stdout is not None
        for line in self._worker.stdout:
            if line.startswith(RESULT_PREFIX):
                return json.loads(line[len(RESULT_PREFIX) :])
        raise RuntimeError(f"{self.name}: the worker process ended (exit status {self._worker.wait()})")

    def run(self, case: BenchCase) -> Measurement:
        assert self._worker.stdin is not None
        message = {name: getattr(case, name) for name in _CASE_FIELDS[self.kind]}
        self._worker.stdin.write(json.dumps(message) + "\n")
        self._worker.stdin.flush()
        fields = self._read()
        fields["method"] = self.name
        return _measurement_type(self.kind)(**fields)

    def close(self) -> None:
        """End the worker (it also ends by itself when this process exits)."""
        for stream in (self._worker.stdin, self._worker.stdout):
            if stream is not None:
                stream.close()
        self._worker.wait(timeout=30)


def _serve(kind: str, model_path: str, context: int, threads: int) -> None:
    if kind == "constrained":
        from .structured_methods import StructuredCase
        from .structured_peer import LlamaCppChatPeer

        peer, case_type = LlamaCppChatPeer(model_path, context, threads), StructuredCase
    else:
        from .llama_peers import LlamaCppPeer

        peer, case_type = LlamaCppPeer("worker", model_path, context, threads), BenchCase
    print(RESULT_PREFIX + json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        fields = json.loads(line)
        for name in ("prompt_ids", "messages", "tools"):  # tuples in the case types
            if name in fields:
                fields[name] = tuple(fields[name])
        print(RESULT_PREFIX + json.dumps(asdict(peer.run(case_type(**fields)))), flush=True)


if __name__ == "__main__":
    _serve(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))

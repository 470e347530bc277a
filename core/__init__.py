"""specdraft: lossless speculative decoding specialised to the application.

The core: ``Draft`` (a token tree), the ``Drafter``, ``Target``, ``Model`` and ``Tokenizer``
protocols, acceptance rules, ``SpeculativeGenerator`` with its ``Stats``, and the backends
(``specdraft.backends``: transformers, llama.cpp, the fast path, an engine). Importing ``specdraft`` loads neither torch
nor llama.cpp: the backends load on first use (``specdraft.TransformersModel``, ``specdraft.LlamaCppModel``,
``load_model``).
"""

from typing import Any

from .acceptance import Acceptance, follow_choices, greedy_accept, speculative_accept
from .backends import load_model
from .constrained import Constraint, ConstraintError, GrammarUnavailableError
from .draft import ROOT, Draft
from .drafter import Drafter, NoDrafter
from .generator import GenerationConfig, GenerationResult, GenerationStream, SpeculativeGenerator
from .logprobs import LogprobsUnavailableError, TokenLogprob
from .model import Model, Tokenizer, check_same_tokenizer
from .model_config import BACKENDS, DEFAULT_MODEL, ModelConfig
from .policy import SpeculationConfig
from .sampling import SamplingParams, SamplingUnavailableError, TokenChooser, warp
from .session import Session, SessionsUnavailableError
from .stats import Stats
from .target import Target
from .text_stream import TextPiece
from .verification import Verification

_BACKEND_NAMES = {
    "TransformersModel": "backends.transformers.model",
    "TransformersTarget": "backends.transformers.model",
    "LlamaCppModel": "backends.llama_cpp",
    "LlamaCppConfig": "backends.llama_cpp",
}


def __getattr__(name: str) -> Any:  # the backends, imported on first use
    if name in _BACKEND_NAMES:
        import importlib

        return getattr(importlib.import_module(f".{_BACKEND_NAMES[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Acceptance",
    "BACKENDS",
    "Constraint",
    "ConstraintError",
    "DEFAULT_MODEL",
    "Draft",
    "Drafter",
    "GenerationConfig",
    "GenerationResult",
    "GenerationStream",
    "GrammarUnavailableError",
    "LlamaCppConfig",
    "LlamaCppModel",
    "LogprobsUnavailableError",
    "Model",
    "ModelConfig",
    "NoDrafter",
    "ROOT",
    "SamplingParams",
    "SamplingUnavailableError",
    "Session",
    "SessionsUnavailableError",
    "SpeculationConfig",
    "SpeculativeGenerator",
    "Stats",
    "Target",
    "TextPiece",
    "TokenChooser",
    "TokenLogprob",
    "Tokenizer",
    "TransformersModel",
    "TransformersTarget",
    "Verification",
    "check_same_tokenizer",
    "follow_choices",
    "greedy_accept",
    "load_model",
    "speculative_accept",
    "warp",
]

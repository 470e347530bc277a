"""specdraft: lossless speculative decoding specialised to the application.

The core: ``Draft`` (a token tree), the ``Drafter`` and ``Target`` protocols, acceptance rules,
the transformers backend, and ``SpeculativeGenerator`` with its ``Stats``.
"""

from .acceptance import Acceptance, greedy_accept, speculative_accept
from .draft import ROOT, Draft
from .drafter import Drafter, NoDrafter
from .generator import GenerationConfig, GenerationResult, GenerationStream, SpeculativeGenerator
from .policy import SpeculationConfig
from .sampling import SamplingParams, warp
from .stats import Stats
from .target import Target
from .text_stream import TextPiece
from .transformers_backend import DEFAULT_MODEL, ModelConfig, TransformersModel, TransformersTarget

__all__ = [
    "Acceptance",
    "DEFAULT_MODEL",
    "Draft",
    "Drafter",
    "GenerationConfig",
    "GenerationResult",
    "GenerationStream",
    "ModelConfig",
    "NoDrafter",
    "ROOT",
    "SamplingParams",
    "SpeculationConfig",
    "SpeculativeGenerator",
    "Stats",
    "Target",
    "TextPiece",
    "TransformersModel",
    "TransformersTarget",
    "greedy_accept",
    "speculative_accept",
    "warp",
]

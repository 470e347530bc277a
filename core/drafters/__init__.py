"""General-purpose drafters that make the core useful on its own."""

from .factory import DrafterSpec, ModelPool
from .draft_model import DraftModelConfig, DraftModelDrafter, check_same_tokenizer
from .prompt_lookup import PromptLookupConfig, PromptLookupDrafter

__all__ = [
    "DraftModelConfig",
    "DrafterSpec",
    "ModelPool",
    "DraftModelDrafter",
    "PromptLookupConfig",
    "PromptLookupDrafter",
    "check_same_tokenizer",
]

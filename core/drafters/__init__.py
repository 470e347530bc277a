"""General-purpose drafters that make the core useful on its own."""

from .draft_model import DraftModelConfig, DraftModelDrafter, check_same_tokenizer
from .prompt_lookup import PromptLookupConfig, PromptLookupDrafter

__all__ = [
    "DraftModelConfig",
    "DraftModelDrafter",
    "PromptLookupConfig",
    "PromptLookupDrafter",
    "check_same_tokenizer",
]

"""General-purpose drafters that make the core useful on its own."""

from ..model import check_same_tokenizer
from .draft_model import DraftModelConfig, DraftModelDrafter
from .prompt_lookup import PromptLookupConfig, PromptLookupDrafter

__all__ = [
    "DraftModelConfig",
    "DraftModelDrafter",
    "PromptLookupConfig",
    "PromptLookupDrafter",
    "check_same_tokenizer",
]

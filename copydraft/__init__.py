"""copydraft: drafts copied from the input, for grammar correction, editing and predicted outputs
(Shallow Aggressive Decoding adapted to decoder-only chat models)."""

from .corrector import CorrectionResult, CorrectorConfig, GrammarCorrector
from .drafter import CopyDraftConfig, CopyDrafter
from .editor import Editor, EditorConfig
from .edits import Edit

__all__ = [
    "CopyDraftConfig",
    "CopyDrafter",
    "CorrectionResult",
    "CorrectorConfig",
    "Edit",
    "Editor",
    "EditorConfig",
    "GrammarCorrector",
]

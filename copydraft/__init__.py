"""copydraft: drafts copied from the input, for grammar correction, editing and predicted outputs
(Shallow Aggressive Decoding adapted to decoder-only chat models)."""

from .answer_check import AnswerCheck, CheckConfig, check_answer
from .corrector import DEFAULT_GRAMMAR_MODEL, CorrectionResult, CorrectorConfig, GrammarCorrector
from .drafter import CopyDraftConfig, CopyDrafter
from .editor import Editor, EditorConfig
from .edits import Edit

__all__ = [
    "AnswerCheck",
    "check_answer",
    "CheckConfig",
    "CopyDraftConfig",
    "CopyDrafter",
    "CorrectionResult",
    "CorrectorConfig",
    "DEFAULT_GRAMMAR_MODEL",
    "Edit",
    "Editor",
    "EditorConfig",
    "GrammarCorrector",
]

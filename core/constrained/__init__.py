"""Constrained decoding (structured outputs): answers that match a JSON schema, JSON, a regex or a
Lark grammar, decoded speculatively and exactly.

- ``Constraint`` (``constraint``): what the answer must match, with ``check`` and ``from_response_format``.
- ``Grammar`` / ``GrammarCompiler`` (``grammar``): one answer's state on llguidance, per model vocabulary.
- ``follow_constrained`` (``walk``): acceptance against the masked logits at every draft position.
- ``GrammarDrafter`` (``drafter``): the bytes the grammar forces, proposed as drafts beside another
  drafter's tokens.

The generator wires them together when ``GenerationConfig.constraint`` is set
(docs/structured-outputs.md). Importing this package does not import llguidance.
"""

from .constraint import JSON_STYLE, Constraint, ConstraintError, ConstraintLimits, from_response_format
from .drafter import GrammarDrafter
from .grammar import Grammar, GrammarCompiler, GrammarUnavailableError, LLGuidanceGrammar
from .walk import follow_constrained

__all__ = [
    "JSON_STYLE",
    "Constraint",
    "ConstraintError",
    "ConstraintLimits",
    "Grammar",
    "GrammarCompiler",
    "GrammarDrafter",
    "GrammarUnavailableError",
    "LLGuidanceGrammar",
    "follow_constrained",
    "from_response_format",
]

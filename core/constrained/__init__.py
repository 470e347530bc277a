"""Constrained decoding (structured outputs): answers that match a JSON schema, JSON, a regex or a
Lark grammar, decoded speculatively and exactly.

- ``Constraint`` (``constraint``): what the answer must match, with ``check`` and ``from_response_format``.
- ``Grammar`` / ``GrammarCompiler`` (``grammar``): one answer's state on llguidance, per model vocabulary.
- ``GrammarDrafter`` (``drafter``): the bytes the grammar forces, proposed as drafts beside another
  drafter's tokens (a plain ``Drafter``).
- ``Selection`` (``selection``): the constraint seam the generator runs through: how the target's
  choice is taken at each row (masked under a constraint, its own without: ``Unconstrained``), and
  the drafter wrapper; ``selection_for`` builds one per request.

The generator's loop is the same with or without a constraint (docs/structured-outputs.md).
Importing this package does not import llguidance.
"""

from .constraint import JSON_STYLE, Constraint, ConstraintError, ConstraintLimits, from_response_format
from .drafter import GrammarDrafter
from .grammar import Grammar, GrammarCompiler, GrammarUnavailableError, LLGuidanceGrammar
from .selection import GrammarSelection, Selection, Unconstrained, selection_for

__all__ = [
    "JSON_STYLE",
    "Constraint",
    "ConstraintError",
    "ConstraintLimits",
    "Grammar",
    "GrammarCompiler",
    "GrammarDrafter",
    "GrammarSelection",
    "GrammarUnavailableError",
    "LLGuidanceGrammar",
    "Selection",
    "Unconstrained",
    "from_response_format",
    "selection_for",
]

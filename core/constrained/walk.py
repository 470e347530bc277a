"""Acceptance under a grammar: ``follow_choices`` with the target's choice taken from masked logits.

At each row of the walk (row 0: after the context; row ``1 + i``: after draft node ``i``, see
``specdraft.acceptance``) the target's own token is chosen from its logits masked by the grammar in the
state that row's prefix leaves it in: the masked argmax (greedy) or a keyed draw from the masked,
renormalised distribution (sampling; ``TokenChooser`` keys draws by position, so the draw at a position
does not depend on how it was reached). The walk follows the child holding that token and advances
the grammar over it; it never advances over a rejected token, so nothing needs rolling back, in
chains and trees alike. The bonus token is chosen but not consumed: the caller advances the grammar
over it (unless it ends the answer).

A drafted token that the grammar refuses is never the target's choice, so it is rejected like any
other mismatch. Drafts carrying distributions are verified here by sample-and-compare, which keeps
the masked distribution exactly.
"""

from __future__ import annotations

from ..acceptance import Acceptance
from ..draft import ROOT, Draft
from ..sampling import TokenChooser
from ..verification import Verification
from .grammar import Grammar, GrammarUnavailableError


def follow_constrained(
    draft: Draft, verification: Verification, grammar: Grammar, chooser: TokenChooser, position: int
) -> Acceptance:
    """The longest draft path whose every token is the target's masked choice, plus its next masked
    choice. ``position``: the absolute position of row 0's token. Advances ``grammar`` over the path."""
    if verification.logits is None:
        raise GrammarUnavailableError(
            "constrained decoding needs the target's logits; this target returns only its choices"
        )
    path: list[int] = []
    node = ROOT
    while True:
        wanted = grammar.choose(verification.logits[node + 1], chooser, position + len(path))
        child = next((c for c in draft.children(node) if draft.tokens[c] == wanted), None)
        if child is None:
            return Acceptance(tuple(path), wanted)
        grammar.advance([wanted])
        path.append(child)
        node = child

"""Selection: the constraint seam. How the target's own token is taken at each row of a verification,
and what the generator's drafter is, so that the decode loop is the same with or without a constraint.

- ``Unconstrained`` (no constraint): the target's own choice per row (``Verification.choice``: its
  argmax, or its draw keyed by position), the request's drafter as it is.
- ``GrammarSelection`` (``GenerationConfig.constraint``): at each row the target's token is chosen from
  its logits **masked** by the grammar in the state that row's prefix leaves it in (the masked argmax,
  or a keyed draw from the masked, renormalised distribution: ``Grammar.choose``); the walk
  (``follow_choices``) advances the grammar over every token it keeps, and the bonus token is
  consumed after it (unless it ends the answer), so the grammar always stands where the answer does.
  It never advances over a rejected token: nothing needs rolling back, in chains and trees alike. A
  drafted token the grammar refuses is never the target's choice, so it is rejected like any other
  mismatch. Drafts are verified by sample-and-compare (never rejection-sampled), which keeps the
  masked distribution exactly; the output is token for token plain constrained decoding's.
  A target that returns no logits but ranks its candidates (``Target.rank_candidates``: a serving
  engine's top-k log-probabilities, ``Verification.from_ranked``) is followed the same way, greedy
  only: a row's masked argmax is its first token in rank order that the grammar's mask holds (every token
  ranked above it is refused, every token not ranked is no likelier), and where none of the ranked
  ones is allowed, the target's own choice among the allowed ones (``Verification.resolve``: one
  more request to the engine, which masks its own logits with them).

The drafter the generator drafts with is ``drafter(inner)``: under a constraint, ``GrammarDrafter``
(the bytes the grammar forces, drafted beside ``inner``'s tokens; ``SpeculationConfig.grammar_drafts``)
or ``ComparedDrafter`` (``inner``'s drafts without their distributions). Both are plain ``Drafter``s.
Two more calls size and count a step for the speculation policy, which sizes only the inner drafter's
part of a draft: forced tokens are kept nearly always, so they ride free up to ``max_draft_len``
(``draft_size``, ``counted``).

``selection_for`` builds the one a request asks for (and refuses a constraint on a target that returns
neither logits nor ranked candidates: ``GrammarUnavailableError``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Protocol, Sequence

from ..acceptance import Acceptance, follow_choices
from ..draft import Draft
from ..drafter import Drafter
from ..sampling import TokenChooser
from ..verification import Verification
from .constraint import Constraint
from .drafter import GrammarDrafter
from .grammar import Grammar, GrammarUnavailableError

if TYPE_CHECKING:
    from ..model import Model
    from ..policy import SpeculationConfig
    from ..stats import Stats
    from ..target import Target


class Selection(Protocol):
    """The constraint seam (module docstring)."""

    def drafter(self, inner: Drafter) -> Drafter:
        """The drafter the generator drafts with, around the request's ``inner`` one."""
        ...

    def draft_size(self, budget: int, room: int) -> int:
        """The most nodes this step's draft may hold, given the policy's ``budget`` (at most ``room``)
        and the ``room`` left in the answer and the context."""
        ...

    def follow(self, draft: Draft, verification: Verification, position: int) -> Acceptance:
        """The longest draft path whose every token is the target's choice, plus its next choice.
        ``position``: the absolute position of row 0's token."""
        ...

    def counted(self, drafted: int, accepted: int) -> tuple[int, int]:
        """Of a step's ``drafted`` nodes and the ``accepted`` ones, those the policy sized."""
        ...

    def report(self, stats: Stats) -> None:
        """Add what this selection measured to the generation's ``stats``."""
        ...


class Unconstrained:
    """No constraint: the target's own choices, the drafter as it is."""

    def drafter(self, inner: Drafter) -> Drafter:
        return inner

    def draft_size(self, budget: int, room: int) -> int:
        return budget

    def follow(self, draft: Draft, verification: Verification, position: int) -> Acceptance:
        return follow_choices(draft, verification.choice)

    def counted(self, drafted: int, accepted: int) -> tuple[int, int]:
        return drafted, accepted

    def report(self, stats: Stats) -> None:
        pass


class ComparedDrafter:
    """``inner``'s drafts without their distributions (at most ``budget`` nodes, then repeated
    siblings merged): under a constraint every draft is compared with the masked choices."""

    def __init__(self, inner: Drafter) -> None:
        self.inner = inner

    def propose(self, context_ids: Sequence[int], budget: int) -> Draft:
        return self.inner.propose(context_ids, budget).truncated(budget).deterministic()

    def observe(self, accepted_len: int) -> None:
        self.inner.observe(accepted_len)


class GrammarSelection:
    """The target's choices from logits masked by ``grammar`` (module docstring). ``eos_ids`` end the
    answer (the grammar does not consume them). ``tokenize`` (the model's, for forced bytes) makes the
    drafter a ``GrammarDrafter`` whose drafts hold at most ``max_draft_len`` nodes; None: a
    ``ComparedDrafter``."""

    def __init__(
        self,
        grammar: Grammar,
        chooser: TokenChooser,
        eos_ids: frozenset[int],
        tokenize: Callable[[bytes], list[int]] | None = None,
        max_draft_len: int = 0,
    ) -> None:
        self.grammar = grammar
        self.chooser = chooser
        self.eos_ids = eos_ids
        self.tokenize = tokenize
        self.max_draft_len = max_draft_len
        self.forced: GrammarDrafter | None = None  # the drafter, when it drafts forced bytes
        self.resolved = 0  # rows of ranked candidates none of which the grammar allowed (asked again)

    def drafter(self, inner: Drafter) -> Drafter:
        if self.tokenize is None:
            return ComparedDrafter(inner)
        self.forced = GrammarDrafter(self.grammar, self.tokenize, inner)
        return self.forced

    def draft_size(self, budget: int, room: int) -> int:
        """``budget`` for ``inner``'s tokens; forced ones ride free up to ``max_draft_len`` and ``room``."""
        if self.forced is None:
            return budget
        self.forced.inner_budget = budget
        return min(room, self.max_draft_len)

    def follow(self, draft: Draft, verification: Verification, position: int) -> Acceptance:
        kept: list[int] = []
        logits = verification.logits  # [1 + len(draft), vocab]
        if logits is not None:

            def choice(row: int) -> int:
                return self.grammar.choose(logits[row], self.chooser, position + len(kept))

        elif verification.ranked is not None and self.chooser.params.greedy:

            def choice(row: int) -> int:
                return self._ranked_choice(verification, row)

        else:
            raise GrammarUnavailableError(
                "constrained decoding needs the target's logits or its ranked candidates (greedy); "
                "this target returns only its choices"
            )

        def keep(token: int) -> None:
            self.grammar.advance([token])
            kept.append(token)

        accepted = follow_choices(draft, choice, keep)
        if accepted.next_token not in self.eos_ids:
            self.grammar.advance([accepted.next_token])
        return accepted

    def _ranked_choice(self, verification: Verification, row: int) -> int:
        """The masked argmax at ``row`` from ranked candidates (module docstring)."""
        assert verification.ranked is not None
        allowed = self.grammar.mask()
        for token in verification.ranked[row]:
            if token < len(allowed) and allowed[token]:
                return token
        self.resolved += 1
        return verification.resolve(row, [int(t) for t in allowed.nonzero()[0]])

    def counted(self, drafted: int, accepted: int) -> tuple[int, int]:
        return (drafted, accepted) if self.forced is None else self.forced.inner_counts(accepted)

    def report(self, stats: Stats) -> None:
        stats.grammar_s = self.grammar.seconds
        stats.grammar_resolved = self.resolved
        if self.forced is not None:
            stats.forced_drafted = self.forced.forced_drafted
            stats.forced_tokens = self.forced.forced_accepted


def selection_for(
    constraint: Constraint | None, model: Model, target: Target, chooser: TokenChooser, speculation: SpeculationConfig
) -> Selection:
    """The selection for one request on ``target`` (``Unconstrained`` without a constraint): the
    constraint compiled for ``model``'s vocabulary, its forced bytes drafted unless
    ``speculation.grammar_drafts`` is off. Raises ``GrammarUnavailableError`` for a target
    that returns no logits and cannot rank its candidates (or is asked to sample), and
    ``ConstraintError`` for a constraint that does not compile."""
    if constraint is None:
        return Unconstrained()
    if not target.returns_logits and not (chooser.params.greedy and target.rank_candidates()):
        raise GrammarUnavailableError(
            f"a constraint needs a target that returns logits, or ranks its candidates for greedy decoding; "
            f"{model.backend}'s does not"
        )
    compiler = model.grammar_compiler()
    tokenize = compiler.tokenize if speculation.grammar_drafts else None
    grammar = compiler.grammar(constraint)
    return GrammarSelection(grammar, chooser, model.eos_token_ids, tokenize, speculation.max_draft_len)

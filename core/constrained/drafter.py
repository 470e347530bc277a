"""GrammarDrafter: the grammar as a drafter, composed with the request's own drafter.

Under a JSON schema most of an answer is forced: the keys, quotes, braces and separators are known
before the model runs (``Grammar.forced_bytes``); the values in between come from what the request's
own drafter copies (the prompt, the documents, a predicted output). A proposal alternates the two,
up to the budget:

1. the forced bytes, tokenized as the model's tokenizer would (``tokenize``), and
2. the inner drafter's proposal after them (its main chain: the first child at every depth), cut at
   the first token the grammar refuses (a token the grammar refuses can never be accepted),

repeated while either adds something (at most ``max_rounds`` times). Where the proposal completes the
constraint, the end-of-generation tokens the grammar then allows are added as sibling leaves (the
model's own choice among them ends the answer in the same pass instead of one more). A proposal has two
limits: ``budget`` for the inner drafter's tokens (what the speculation policy asked for) and ``limit``
for the whole draft. Forced tokens are kept nearly always, so they are not held to the policy's budget:
on a backend where a wide pass costs almost as many one-token passes, a pass over f forced tokens still
yields about f + 1 tokens. As a ``Drafter``, ``propose(context, limit)`` holds the inner drafter to
``inner_budget`` (set by the constraint seam each step, ``specdraft.constrained.selection``; None: the
limit); ``propose_within`` takes both limits. The grammar state is advanced over the proposal to find
what comes next and rolled back before returning, so the caller's state is unchanged. Nothing is
committed before the target checks it: forced tokens are drafts like any other, since the model may
spell the forced text with other tokens (``"`` and ``,`` as one token ``",``) and then the target's
choice wins.

``forced_drafted`` counts the forced tokens proposed, ``forced_accepted`` those the target kept;
``inner_counts`` says how many of the inner drafter's tokens were proposed and kept in the last step
(what the policy learns from). The inner drafter's ``observe`` gets the accepted length of the whole
proposal.
"""

from __future__ import annotations

from typing import Callable, Sequence

from ..draft import ROOT, Draft
from ..drafter import Drafter
from .grammar import Grammar

MAX_ROUNDS = 4


class GrammarDrafter:
    def __init__(
        self, grammar: Grammar, tokenize: Callable[[bytes], list[int]], inner: Drafter, max_rounds: int = MAX_ROUNDS
    ) -> None:
        self.grammar = grammar
        self.tokenize = tokenize
        self.inner = inner
        self.max_rounds = max_rounds
        self.forced_drafted = 0
        self.forced_accepted = 0
        self._forced: list[bool] = []  # per chain node of the last proposal: forced by the grammar
        self._ends_at: int | None = None  # depth of the end-of-generation leaves of the last proposal, if any
        self.inner_budget: int | None = None  # the inner drafter's tokens per proposal (None: the limit)

    def propose(self, context_ids: Sequence[int], budget: int) -> Draft:
        """At most ``budget`` nodes in all, ``inner_budget`` of them the inner drafter's."""
        inner = budget if self.inner_budget is None else self.inner_budget
        return self.propose_within(context_ids, inner, budget)

    def propose_within(self, context_ids: Sequence[int], budget: int, limit: int) -> Draft:
        """A chain holding at most ``budget`` of the inner drafter's tokens, then any end-of-generation
        leaves (module docstring): at most ``limit`` nodes in all."""
        self._forced, self._ends_at = [], None
        if limit <= 0:
            self.inner.propose(context_ids, 0)  # the first call tells the inner drafter where the output starts
            return Draft.empty()
        tokens: list[int] = []
        forced: list[bool] = []
        consumed = 0
        try:
            for _ in range(self.max_rounds):
                added = self._take(self._forced_tokens(limit - len(tokens)), tokens, forced, True)
                consumed += added
                inner_room = min(budget - forced.count(False), limit - len(tokens))
                if inner_room <= 0 or self.grammar.finished:
                    break
                inner = _main_chain(self.inner.propose([*context_ids, *tokens], inner_room))
                more = self._take(inner[:inner_room], tokens, forced, False)
                consumed += more
                if not (added or more) or len(tokens) >= limit:
                    break
            ends = self._ends() if len(tokens) < limit and self.grammar.finished else []
        finally:
            self.grammar.rollback(consumed)
        self._forced = forced
        self._ends_at = len(tokens) if ends else None
        ends = ends[: limit - len(tokens)]
        parent = len(tokens) - 1  # ROOT (-1) when the chain is empty
        return Draft((*tokens, *ends), (*range(-1, len(tokens) - 1), *[parent] * len(ends)))

    def inner_counts(self, accepted_len: int) -> tuple[int, int]:
        """(the inner drafter's tokens in the last proposal, those among its first ``accepted_len``)."""
        return self._forced.count(False), self._forced[:accepted_len].count(False)

    def observe(self, accepted_len: int) -> None:
        ended = self._ends_at is not None and accepted_len > self._ends_at  # an end-of-generation leaf was kept
        self.forced_drafted += sum(self._forced) + int(self._ends_at is not None)
        self.forced_accepted += sum(self._forced[:accepted_len]) + int(ended)
        self.inner.observe(min(accepted_len, len(self._forced)))

    def _ends(self) -> list[int]:
        """The end-of-generation tokens a complete constraint allows (all it allows then)."""
        return [int(t) for t in self.grammar.mask().nonzero()[0]]

    def _forced_tokens(self, room: int) -> list[int]:
        if room <= 0:
            return []
        data = self.grammar.forced_bytes()
        return self.tokenize(data)[:room] if data else []

    def _take(self, candidates: list[int], tokens: list[int], forced: list[bool], is_forced: bool) -> int:
        """Advance the grammar over the allowed prefix of ``candidates`` and append it; returns its length."""
        if not candidates:
            return 0
        count = self.grammar.advance(candidates)
        tokens.extend(candidates[:count])
        forced.extend([is_forced] * count)
        return count


def _main_chain(draft: Draft) -> list[int]:
    """The tokens of ``draft``'s first branch (the first child at every depth)."""
    chain: list[int] = []
    node = ROOT
    while True:
        children = draft.children(node)
        if not children:
            return chain
        node = children[0]
        chain.append(draft.tokens[node])

"""Test drafters that know the reference output: always right, always wrong, partly right, trees."""

from __future__ import annotations

from typing import Sequence

import torch

from specdraft import ROOT, Draft


def greedy_continuations(
    model, tokenizer, prompts: Sequence[str], n_new: int
) -> dict[str, tuple[list[int], list[int]]]:
    """prompt -> (prompt ids, exactly ``n_new`` tokens of the model's own greedy continuation as
    transformers' ``generate`` computes it): the reference every losslessness test compares with."""
    out = {}
    for prompt in prompts:
        ids = tokenizer(prompt).input_ids
        generated = model.hf_model.generate(
            torch.tensor([ids]), max_new_tokens=n_new, min_new_tokens=n_new, do_sample=False
        )
        out[prompt] = (ids, generated[0, len(ids) :].tolist())
    return out


class OracleDrafter:
    """Drafts from ``reference`` (prompt + the target's own greedy output).

    mode "right": the true continuation; "wrong": every token shifted by one; "partly": the true
    continuation with every ``period``-th draft token wrong; "tree": a wrong branch first, then the
    true branch with a wrong sibling at depth 2 (so acceptance must follow the second child).
    """

    def __init__(self, reference: Sequence[int], vocab_size: int, mode: str, period: int = 3) -> None:
        self.reference = list(reference)
        self.vocab_size = vocab_size
        self.mode = mode
        self.period = period
        self.observed: list[int] = []

    def _wrong(self, token: int) -> int:
        return (token + 1) % self.vocab_size

    def propose(self, context_ids: Sequence[int], budget: int) -> Draft:
        assert list(context_ids) == self.reference[: len(context_ids)], "context left the reference"
        truth = self.reference[len(context_ids) : len(context_ids) + budget]
        if not truth:
            return Draft.empty()
        if self.mode == "right":
            return Draft.chain(truth)
        if self.mode == "wrong":
            return Draft.chain([self._wrong(t) for t in truth])
        if self.mode == "partly":
            return Draft.chain([self._wrong(t) if (i + 1) % self.period == 0 else t for i, t in enumerate(truth)])
        if self.mode == "tree":
            tokens, parents = [self._wrong(truth[0])], [ROOT]  # node 0: a wrong first branch
            tokens.append(truth[0])  # node 1: the true first token
            parents.append(ROOT)
            previous = 1
            for depth, token in enumerate(truth[1:], start=2):
                if depth == 2:
                    tokens.append(self._wrong(token))  # a wrong sibling before the true one
                    parents.append(previous)
                tokens.append(token)
                parents.append(previous)
                previous = len(tokens) - 1
            return Draft(tuple(tokens), tuple(parents))
        raise ValueError(self.mode)

    def observe(self, accepted_len: int) -> None:
        self.observed.append(accepted_len)


class LenientOracle(OracleDrafter):
    """``OracleDrafter`` that drafts nothing once the context has left the reference instead of failing:
    under a constraint the grammar's forced tokens may spell the forced text differently from the model."""

    def propose(self, context_ids: Sequence[int], budget: int) -> Draft:
        if list(context_ids) != self.reference[: len(context_ids)]:
            return Draft.empty()
        return super().propose(context_ids, budget)


class Recording:
    """Wraps a drafter and keeps every draft it proposed."""

    def __init__(self, drafter) -> None:
        self.drafter = drafter
        self.drafts: list[Draft] = []

    def propose(self, context_ids, budget):
        draft = self.drafter.propose(context_ids, budget)
        self.drafts.append(draft)
        return draft

    def observe(self, accepted_len):
        self.drafter.observe(accepted_len)


def started_target(model, context: list[int], pending_step: bool):
    """(target, its context): a fresh target of ``model`` after the prefill of ``context``; with
    ``pending_step`` also after one plain step (token 9), so that the next verification runs a
    pending token in front of the draft."""
    target = model.new_target()
    target.prefill(context)
    if pending_step:
        target.verify(Draft.empty())
        target.commit([], 9)
        return target, context + [9]
    return target, context

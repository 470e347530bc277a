"""A small model drafting for a larger one with the same tokenizer (e.g. Qwen 0.5B for Qwen 1.5B),
on any backend that runs here (``Model.new_session()``: transformers, llama.cpp, the fast path).

Greedy decoding: the draft model proposes its greedy chain; with ``tree_width`` k > 1 it also
proposes, at every depth, its next k-1 most likely tokens as leaf alternatives (a "chain with
alternatives" tree of ``k`` nodes per depth), verified in the same target pass.
Sampling: the draft model samples from its own warped distribution ``q`` and attaches ``q`` to
every node, so the core's speculative sampling keeps the target's distribution exactly; with
``tree_width`` k > 1 each depth holds k independent samples of ``q`` (SpecInfer's multi-candidate
condition; repeats allowed) and the chain continues from the first.

The drafter keeps its own cache between steps and rolls it back to the longest common prefix with
the context it is given (a truncation: cheap on every backend).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ..draft import ROOT, Draft
from ..model import Model
from ..sampling import DRAFT_STREAM, PositionalRandom, SamplingParams, sample, top_tokens, warp
from ..session import Logits, Session


@dataclass(frozen=True)
class DraftModelConfig:
    tree_width: int = 1  # 1: chain; k > 1: k candidates per depth

    def __post_init__(self) -> None:
        if self.tree_width < 1:
            raise ValueError(f"tree_width must be >= 1, got {self.tree_width}")


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


class DraftModelDrafter:
    """Per request: holds the draft model's cache for this sequence."""

    def __init__(
        self,
        model: Model,
        vocab_size: int,
        sampling: SamplingParams = SamplingParams(),
        rng: PositionalRandom | None = None,
        config: DraftModelConfig = DraftModelConfig(),
    ) -> None:
        self.model = model
        self.vocab_size = vocab_size  # the target's: draft distributions are padded to it
        self.sampling = sampling
        self.rng = rng or PositionalRandom(0)
        self.config = config
        self.session: Session = model.new_session()
        self._fed: list[int] = []  # tokens whose keys/values the session holds

    def _logits_after(self, context: Sequence[int]) -> Logits:
        """Draft logits ``[vocab]`` for the token after ``context``, reusing the cached prefix."""
        keep = min(_common_prefix(self._fed, context), len(context) - 1)
        self.session.truncate(keep)
        self._fed = list(context)
        return self.session.feed(context[keep:], all_logits=False)[-1]

    def _feed(self, token: int) -> Logits:
        self._fed.append(token)
        return self.session.feed([token])[-1]

    def propose(self, context_ids: Sequence[int], budget: int) -> Draft:
        if budget <= 0:
            return Draft.empty()
        width = min(self.config.tree_width, budget)
        depth = budget // width
        logits = self._logits_after(context_ids)
        tokens: list[int] = []
        parents: list[int] = []
        q_rows: list[Any] = []
        chain_parent = ROOT
        for level in range(depth):
            if self.sampling.greedy:
                candidates = top_tokens(logits, width)
            else:
                q = warp(logits, self.sampling).cpu()
                position = len(context_ids) + level
                draws = [self.rng.generator(position, DRAFT_STREAM + 8 * i) for i in range(width)]
                candidates = [sample(q, draw) for draw in draws]
                q_rows += [q] * width
            chain_node = len(tokens)
            for token in candidates:
                tokens.append(int(token))
                parents.append(chain_parent)
            chain_parent = chain_node
            if level + 1 < depth:
                logits = self._feed(candidates[0])
        return Draft(tuple(tokens), tuple(parents), self._padded(q_rows) if q_rows else None)

    def _padded(self, rows: list[Any]) -> Any:
        """``[len(rows), target vocab]``: the draft's rows, zero beyond its own vocabulary."""
        import torch

        probs = torch.zeros(len(rows), self.vocab_size)
        stacked = torch.stack(rows)
        width = min(stacked.shape[1], self.vocab_size)
        probs[:, :width] = stacked[:, :width]
        return probs

    def observe(self, accepted_len: int) -> None:
        pass

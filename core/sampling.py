"""Sampling parameters, the warp from logits to the distribution that is sampled, and seeding.

``SamplingParams.temperature == 0`` means greedy decoding. Otherwise the target's distribution is
``softmax(logits / temperature)`` restricted to the ``top_k`` most likely tokens (0: no limit) and
then to the smallest set whose probability reaches ``top_p`` (1.0: no limit), renormalised: the
same order transformers' ``generate`` applies (temperature, top-k, top-p).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch

    from .session import Logits


class SamplingUnavailableError(ValueError):
    """Sampling (temperature > 0) was asked of a model whose targets verify greedy decoding only
    (an engine-backed target sees only top-1 log-probabilities)."""


@dataclass(frozen=True)
class SamplingParams:
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.top_k < 0:
            raise ValueError(f"top_k must be >= 0, got {self.top_k}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0


def warp(logits: Logits, params: SamplingParams) -> "torch.Tensor":
    """Probabilities ``[..., vocab]`` (float32) to sample from, given raw logits ``[..., vocab]``
    (a torch tensor or a numpy array).

    For greedy params this returns the one-hot of the argmax.
    """
    import torch

    logits = torch.as_tensor(logits).float()
    if params.greedy:
        return torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[-1]).float()
    # Shifted so the largest logit is 0 and divided in float64: a temperature as small as 5e-324
    # then gives 0 for the best token(s) and -inf for the rest (a one-hot, or a tie split evenly),
    # never inf - inf or 0 / 0 (NaN).
    logits = (logits - logits.max(-1, keepdim=True).values).double() / params.temperature
    if 0 < params.top_k < logits.shape[-1]:
        kth = torch.topk(logits, params.top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    if params.top_p < 1.0:
        sorted_probs, order = probs.sort(dim=-1, descending=True)
        mass_before = sorted_probs.cumsum(-1) - sorted_probs
        drop = mass_before >= params.top_p
        drop[..., 0] = False  # the most likely token always stays, however small top_p is
        sorted_probs = sorted_probs.masked_fill(drop, 0.0)
        probs = torch.zeros_like(probs).scatter(-1, order, sorted_probs)
        probs = probs / probs.sum(-1, keepdim=True)
    return probs.float()


def sample(probs: "torch.Tensor", generator: "torch.Generator | None") -> int:
    """One token id drawn from ``probs`` ``[vocab]``."""
    import torch

    return int(torch.multinomial(probs, 1, generator=generator).item())


TARGET_STREAM = 0  # draws of the target's token at a position (sample-and-compare, bonus, residual)
ACCEPT_STREAM = 1  # uniforms of rejection sampling at a position
DRAFT_STREAM = 2  # a draft model's own samples at a position


class PositionalRandom:
    """Random numbers keyed by (seed, sequence position, stream) instead of by draw order.

    Every draw for the token at absolute position ``i`` comes from its own generator, so what is
    drawn at a position does not depend on how earlier positions were drafted. Consequence: with
    deterministic drafts (sample-and-compare) the sampled text is exactly plain sampling's for the
    same seed, whatever the drafter and however long its drafts were.
    """

    def __init__(self, seed: int) -> None:
        self.seed = int(seed)

    def generator(self, position: int, stream: int = TARGET_STREAM) -> "torch.Generator":
        import torch

        key = hash((self.seed, int(position), int(stream))) & 0x7FFF_FFFF_FFFF_FFFF
        return torch.Generator().manual_seed(key)


def top_tokens(row: Logits, k: int) -> list[int]:
    """The ``k`` largest entries' indices of a ``[vocab]`` row (numpy or torch), largest first."""
    if not isinstance(row, np.ndarray):  # a torch tensor
        return [int(t) for t in row.topk(k).indices.tolist()]
    if k >= row.shape[0]:
        return [int(t) for t in np.argsort(-row, kind="stable")]
    part = np.argpartition(-row, k - 1)[:k]
    return [int(t) for t in part[np.argsort(-row[part], kind="stable")]]


def argmax(row: Logits) -> int:
    """Index of the largest value of a ``[vocab]`` row (numpy or torch; the first on ties)."""
    return int(row.argmax())


@dataclass(frozen=True)
class TokenChooser:
    """How a target picks its **own** token after a prefix: the argmax of its logits (greedy), or a
    draw from its warped distribution keyed by (``seed``, the token's absolute position). Keyed draws
    make the choice at a position independent of how it was reached, so any backend, local or
    remote, that chooses with the same chooser picks the same token (given the same logits).
    A verifier that only compares drafted tokens with these choices (sample-and-compare) keeps the
    target's distribution exactly; greedy verification is the special case of the argmax."""

    params: SamplingParams = SamplingParams()
    seed: int = 0

    def choose(self, logits_row: Logits, position: int) -> int:
        """The token for absolute ``position`` given the logits ``[vocab]`` predicting it."""
        if self.params.greedy:
            return argmax(logits_row)
        probs = warp(logits_row, self.params).cpu()
        return sample(probs, PositionalRandom(self.seed).generator(position, TARGET_STREAM))

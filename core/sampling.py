"""Sampling parameters, the warp from logits to the distribution that is sampled, and seeding.

``SamplingParams.temperature == 0`` means greedy decoding. Otherwise the target's distribution is
``softmax(logits / temperature)`` restricted to the ``top_k`` most likely tokens (0: no limit) and
then to the smallest set whose probability reaches ``top_p`` (1.0: no limit), renormalised: the
same order transformers' ``generate`` applies (temperature, top-k, top-p).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


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


def warp(logits: torch.Tensor, params: SamplingParams) -> torch.Tensor:
    """Probabilities ``[..., vocab]`` (float32) to sample from, given raw logits ``[..., vocab]``.

    For greedy params this returns the one-hot of the argmax.
    """
    logits = logits.float()
    if params.greedy:
        return torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[-1]).float()
    logits = logits / params.temperature
    if 0 < params.top_k < logits.shape[-1]:
        kth = torch.topk(logits, params.top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    if params.top_p < 1.0:
        sorted_probs, order = probs.sort(dim=-1, descending=True)
        mass_before = sorted_probs.cumsum(-1) - sorted_probs
        sorted_probs = sorted_probs.masked_fill(mass_before >= params.top_p, 0.0)
        probs = torch.zeros_like(probs).scatter(-1, order, sorted_probs)
        probs = probs / probs.sum(-1, keepdim=True)
    return probs


def sample(probs: torch.Tensor, generator: torch.Generator | None) -> int:
    """One token id drawn from ``probs`` ``[vocab]``."""
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

    def generator(self, position: int, stream: int = TARGET_STREAM) -> torch.Generator:
        key = hash((self.seed, int(position), int(stream))) & 0x7FFF_FFFF_FFFF_FFFF
        return torch.Generator().manual_seed(key)

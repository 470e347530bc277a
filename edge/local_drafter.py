"""LocalDrafter: the laptop's small model proposing the next tokens, with its confidence in each.

Wraps one ``DraftSession`` (``model.new_session()``: llama.cpp or transformers) for one sequence.
``next(context)`` answers the draft model's distribution summary after ``context``: its likeliest
token, that token's probability, and the runner-up (an alternative branch for the tree). The
session keeps the keys/values of what it was fed and rolls back to the longest common prefix with
each new context (a truncation), so extending a chain costs one one-token pass per token.

``choose(context, temperature, position)``: the token local generation emits when the server is
gone: the argmax (greedy), or a draw from ``softmax(logits / temperature)`` keyed by (seed,
position) so a run repeats.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np


@dataclass(frozen=True)
class Guess:
    token: int  # the draft model's likeliest next token
    prob: float  # its probability under the draft model
    alt: int  # the runner-up
    alt_prob: float
    logits: Any  # the row itself (numpy float64), for local sampling


def _row(logits: Any) -> np.ndarray:
    if hasattr(logits, "detach"):
        logits = logits.detach().cpu().double().numpy()
    return np.asarray(logits, dtype=np.float64)


class LocalDrafter:
    def __init__(self, model: Any, seed: int = 0) -> None:
        self.model = model
        self.session = model.new_session()
        self._fed: list[int] = []
        self.seed = seed
        self.passes = 0

    def next(self, context: Sequence[int]) -> Guess:
        """The draft model's guess for the token after ``context``."""
        keep = 0
        for a, b in zip(self._fed, context):
            if a != b:
                break
            keep += 1
        keep = min(keep, len(context) - 1)  # always feed at least one token to get a row
        self.session.truncate(keep)
        self._fed = list(context)
        self.passes += 1
        row = _row(self.session.feed(list(context[keep:]), all_logits=False)[-1])
        top2 = np.argpartition(-row, 1)[:2]
        first, second = (int(top2[0]), int(top2[1])) if row[top2[0]] >= row[top2[1]] else (int(top2[1]), int(top2[0]))
        shifted = np.exp(row - row[first])
        total = shifted.sum()
        return Guess(first, float(shifted[first] / total), second, float(shifted[second] / total), row)

    def choose(self, guess: Guess, temperature: float, position: int) -> int:
        """The token to emit locally at absolute ``position`` (argmax, or a keyed draw)."""
        if temperature <= 0:
            return guess.token
        z = (guess.logits - guess.logits.max()) / temperature
        p = np.exp(z)
        p /= p.sum()
        rng = np.random.default_rng([self.seed & 0xFFFF_FFFF, position])
        return int(rng.choice(len(p), p=p))

    def close(self) -> None:
        self.session = self.model.new_session()
        self._fed = []

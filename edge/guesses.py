"""The laptop's small model read as guesses: its next tokens, with its confidence in each.

``LocalGuesser`` wraps one ``Session`` (``model.new_session()``: llama.cpp or transformers) for
one sequence. ``guess(context)`` answers the draft model's distribution summary after ``context`` (a
``Guess``): its ``top`` tokens with their probabilities (the children a token tree may draft), and
the token the main chain continues with: the likeliest one (greedy), or, when it samples
(``sampling`` given), a draw from the **draft distribution** ``q``, which is then part of the guess.
The session keeps the keys/values of what it was fed and rolls back to the longest common prefix
with each new context (a truncation), so extending a chain costs one one-token pass per token.
(The edge's ``Drafter``, ``specdraft.edge.drafter``, builds token trees from these guesses.)

The draft distribution ``q`` (``draft_distribution``) is the draft model's row warped by the
target's temperature and top-p and restricted to at most ``q_top_k`` tokens, renormalised. The
client draws from exactly this ``q`` and sends it whole (a short list of (token, probability)), so
the server can apply speculative sampling's rejection rule, which needs ``q`` at every token: here
``q`` is 0 outside the list, exactly. Draws are keyed by (seed, position, sibling index): a position
drafted again from another context reuses its uniform, which is harmless because a discarded draw
never decided anything that was emitted.

``choose(guess, temperature, position)``: the token local generation emits when the server is
gone: the argmax (greedy), or a draw from ``softmax(logits / temperature)`` keyed by (seed,
position) so a run repeats.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from specdraft.sampling import DRAFT_STREAM, SamplingParams
from specdraft.session import Logits

from .config import EdgeClientConfig

TOP = 8  # tokens summarised per guess (the widest a tree node can branch)


@dataclass(frozen=True)
class Guess:
    token: int  # the main chain's next token: the argmax, or a draw from ``q`` when sampling
    prob: float  # its probability (under the draft model; under ``q`` when sampling)
    alt: int  # the runner-up (greedy) of the draft model
    alt_prob: float
    logits: np.ndarray  # the row itself (float64), for local sampling
    top: tuple[tuple[int, float], ...] = ()  # the TOP likeliest tokens and probabilities, likeliest first
    q: tuple[tuple[int, ...], tuple[float, ...]] | None = None  # sampling: the draft distribution drawn from
    position: int = 0  # absolute position of the token this guess predicts
    in_flight: int = 0  # the verification in flight while it was drafted (the pipeline; 0: none)

    @property
    def confidence(self) -> float:
        """How sure the draft model is here: its top probability (under ``q`` when sampling)."""
        return max(self.q[1]) if self.q is not None else self.top[0][1] if self.top else self.prob


def _row(logits: Logits) -> np.ndarray:
    if not isinstance(logits, np.ndarray):  # a torch tensor
        return logits.detach().cpu().double().numpy()
    return np.asarray(logits, dtype=np.float64)


def _top(row: np.ndarray, k: int) -> np.ndarray:
    k = min(k, row.shape[0])
    part = np.argpartition(-row, k - 1)[:k]
    return part[np.argsort(-row[part], kind="stable")]


def draft_distribution(row: Logits, params: SamplingParams, k: int) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """``q``: ``softmax(row / temperature)`` over the ``min(k, top_k)`` likeliest tokens, cut to
    ``top_p`` (the likeliest token always stays), renormalised; as (tokens, probabilities) with
    every probability > 0. Deterministic in ``row`` (numpy float64)."""
    row = _row(row)
    width = k if params.top_k == 0 else min(k, params.top_k)
    order = _top(row, max(1, width))
    z = (row[order] - row[order[0]]) / params.temperature
    p = np.exp(z)
    p /= p.sum()
    if params.top_p < 1.0:
        before = np.cumsum(p) - p
        keep = before < params.top_p
        keep[0] = True
        order, p = order[keep], p[keep]
        p = p / p.sum()
    keep = p > 0
    order, p = order[keep], p[keep] / p[keep].sum()
    return tuple(int(t) for t in order), tuple(float(x) for x in p)


def draw(q: tuple[Sequence[int], Sequence[float]], seed: int, position: int, index: int) -> tuple[int, float]:
    """One token from ``q`` keyed by (``seed``, ``position``, ``index``), and its probability."""
    tokens, probs = q
    rng = np.random.default_rng([seed & 0xFFFF_FFFF, seed >> 32 & 0xFFFF_FFFF, position, DRAFT_STREAM, index])
    i = int(rng.choice(len(tokens), p=np.asarray(probs, dtype=np.float64)))
    return int(tokens[i]), float(probs[i])


class LocalGuesser:
    """``sampling``: None guesses the argmax; sampling params draw from ``q`` (``q_top_k`` wide)."""

    def __init__(
        self,
        model: Any,
        seed: int = 0,
        sampling: SamplingParams | None = None,
        q_top_k: int = EdgeClientConfig().q_top_k,
    ) -> None:
        self.model = model
        self.session = model.new_session()
        self._fed: list[int] = []
        self.seed = seed
        self.sampling = None if sampling is None or sampling.greedy else sampling
        self.q_top_k = q_top_k
        self.passes = 0

    def guess(self, context: Sequence[int]) -> Guess:
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
        order = _top(row, TOP)
        shifted = np.exp(row - row[order[0]])
        total = shifted.sum()
        top = tuple((int(t), float(shifted[t] / total)) for t in order)
        first, second = top[0], top[1] if len(top) > 1 else top[0]
        position = len(context)
        if self.sampling is None:
            return Guess(first[0], first[1], second[0], second[1], row, top, None, position)
        q = draft_distribution(row, self.sampling, self.q_top_k)
        token, prob = draw(q, self.seed, position, 0)
        return Guess(token, prob, second[0], second[1], row, top, q, position)

    def choose(self, guess: Guess, temperature: float, position: int) -> int:
        """The token to emit locally at absolute ``position`` (argmax, or a keyed draw)."""
        if temperature <= 0:
            return int(np.argmax(guess.logits)) if guess.q is not None else guess.token
        z = (guess.logits - guess.logits.max()) / temperature
        p = np.exp(z)
        p /= p.sum()
        rng = np.random.default_rng([self.seed & 0xFFFF_FFFF, position])
        return int(rng.choice(len(p), p=p))

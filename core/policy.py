"""SpeculationPolicy: how many nodes to ask the drafter for, chosen from measured cost.

The policy keeps a running estimate ``alpha`` of the probability that the target accepts the next
draft token (an exponentially decayed count of accepted tokens vs. rejections), the target's
measured ``PassCostProfile``, and the drafter's measured seconds per drafted token ``d`` (a moving
average; near 0 for copies and lookups, real for a draft model). Drafting ``k`` tokens yields on
average ``E(k) = 1 + alpha + ... + alpha**k`` tokens for ``k * d + cost(k + 1)`` seconds, so the
draft length is the ``k`` in ``[0, max_draft_len]`` that maximises ``E(k) / (k * d + cost(k + 1))``. Full
acceptance raises ``alpha`` and so grows the draft; early rejection lowers it and shrinks it.

Fall-back: when the best ``k`` is 0 (no draft length beats plain decoding on this device at this
acceptance rate), the next ``backoff`` steps decode plainly; then one probe draft checks whether
drafts got better. The probe is as long as the prior acceptance would draft on this device, at
least ``min_draft_len`` and at most ``initial_draft_len``: where wide passes are dear (llama.cpp
on a CPU: a 17-token pass cost 9x a one-token pass) a long probe cost more than it could find. Each
consecutive fall-back doubles the back-off (up to ``max_backoff``). Until a 1-token pass has been timed, drafts are
``initial_draft_len`` long and every ``window``-th step is a plain step that measures it.
With ``adaptive=False`` the length is fixed at ``initial_draft_len`` and there is no fall-back.

The prior: ``alpha`` starts at ``prior_alpha`` weighted as ``prior_weight`` draft tokens seen, so
one short draft accepted whole (4 of 4) moves a 0.8 prior to 0.91, not to 0.96: with a weight of 1
the next draft was 31 tokens long where a pass costs ``1 + 0.067 * (n - 1)`` (a 16-token pass 2x
a one-token one, float32 transformers on a CPU), 15 now. The default prior is 0.8: what specdraft's
drafters propose are copies (prompt lookup, references, the input) that are right for a stretch or
wrong at once. With 0.5 prompt lookup's first drafts on grammar sentences were 3 tokens long where
transformers' fixed 10 were accepted whole (replayed over the recorded answers: 0.371 target passes
per token against 0.300; 0.338 with 0.8), and a short answer ends before the estimate catches up.

First step (``plain_first_step``, on by default): on targets whose prefill already chose the first
token (``Target.prefill_predicts_next``: transformers, llama.cpp) a plain first step needs no pass
at all, while a draft there costs a whole pass and is made from the prompt's tail, a chat
template's assistant header, which no earlier text continues the way the answer will (on the rag,
chat-summarization and chat-multiturn prompts prompt lookup's first draft was refused 16 times in
16). A draft that would have been right is not lost: the second step drafts it, now knowing the
first token, in the pass the first step would have run. On targets whose first verification is a
pass or a round trip anyway (an engine, a remote verify server) the first step drafts. The
generator applies this (it knows the target); the policy only ever sees the steps after.
"""

from __future__ import annotations

from dataclasses import dataclass

from .cost import PassCostProfile

DRAFT_COST_SMOOTHING = 0.3  # weight of the newest step in the drafter's seconds per token (a moving average)


@dataclass(frozen=True)
class SpeculationConfig:
    initial_draft_len: int = 8
    min_draft_len: int = 1
    max_draft_len: int = 32
    adaptive: bool = True
    fallback: bool = True
    window: int = 4
    backoff: int = 4
    max_backoff: int = 16  # short: copies come in bursts, and a missed burst costs more than a probe
    decay: float = 0.9  # weight of the past in the acceptance estimate, per verify step
    prior_alpha: float = 0.8  # acceptance before any evidence (module docstring: "The prior")
    prior_weight: float = 4.0  # the prior counts as this many draft tokens seen (module docstring)
    plain_first_step: bool = True  # decode a request's first step plainly where that is free (module docstring)
    grammar_drafts: bool = (
        True  # under a constraint, draft the bytes its grammar forces (specdraft.constrained.drafter)
    )

    def __post_init__(self) -> None:
        if not 1 <= self.min_draft_len <= self.initial_draft_len <= self.max_draft_len:
            raise ValueError("need 1 <= min_draft_len <= initial_draft_len <= max_draft_len")
        if self.window < 1 or self.backoff < 1 or self.max_backoff < self.backoff:
            raise ValueError("need window >= 1 and 1 <= backoff <= max_backoff")
        if not 0.0 < self.decay < 1.0 or not 0.0 < self.prior_alpha < 1.0:
            raise ValueError("decay and prior_alpha must be in (0, 1)")
        if self.prior_weight <= 0.0:
            raise ValueError("prior_weight must be > 0")


def expected_tokens(alpha: float, k: int) -> float:
    """Mean tokens a verify step yields for a k-token chain at per-token acceptance ``alpha``."""
    return float(k + 1) if alpha >= 1.0 else (1.0 - alpha ** (k + 1)) / (1.0 - alpha)


class SpeculationPolicy:
    def __init__(self, config: SpeculationConfig, cost: PassCostProfile) -> None:
        self.config = config
        self.cost = cost
        self._accepted = config.prior_weight * config.prior_alpha  # decayed count of accepted draft tokens
        self._rejected = config.prior_weight * (1.0 - config.prior_alpha)  # decayed count of rejections
        self.plain_steps_left = 0
        self._probe_next = False
        self._backoff = config.backoff
        self._steps_since_plain = 0
        self.draft_seconds_per_token = 0.0

    @property
    def alpha(self) -> float:
        return self._accepted / (self._accepted + self._rejected)

    @property
    def falling_back(self) -> bool:
        return self.plain_steps_left > 0

    def best_length(self, alpha: float | None = None) -> int:
        """The draft length that maximises expected tokens per second at acceptance ``alpha``
        (default: the running estimate); 0: don't draft."""
        alpha = self.alpha if alpha is None else alpha
        estimate = self.cost.estimator()
        one = estimate(1)
        if one is None:  # the callers ask only once a one-token pass was measured (cost.known(1))
            raise ValueError("best_length needs a measured one-token pass")
        best_k, best_rate = 0, 1.0 / one
        for k in range(self.config.min_draft_len, self.config.max_draft_len + 1):
            seconds = k * self.draft_seconds_per_token + (estimate(k + 1) or one)
            rate = expected_tokens(alpha, k) / seconds
            if rate > best_rate:
                best_k, best_rate = k, rate
        return best_k

    def budget(self) -> int:
        """Nodes to request for the next step; 0 means decode this step plainly."""
        config = self.config
        if not config.adaptive:
            return config.initial_draft_len
        if self.plain_steps_left > 0:
            return 0
        if self._probe_next:
            return self.probe_length()
        if not self.cost.known(1):
            return 0 if self._steps_since_plain >= config.window else config.initial_draft_len
        best = self.best_length()
        if best == 0 and config.fallback:
            self.plain_steps_left = self._backoff
            self._backoff = min(config.max_backoff, self._backoff * 2)
            self._probe_next = True
            return 0
        return max(best, config.min_draft_len)

    def probe_length(self) -> int:
        """The length of a probe after a fall-back (module docstring)."""
        config = self.config
        if not self.cost.known(1):
            return config.initial_draft_len
        return max(config.min_draft_len, min(config.initial_draft_len, self.best_length(config.prior_alpha)))

    def observe(self, requested: int, drafted: int, accepted: int, draft_seconds: float = 0.0) -> None:
        """Record one verify step: ``requested`` budget, ``drafted`` nodes sent, ``accepted`` kept,
        ``draft_seconds`` spent drafting them (pass 0 to keep decisions independent of timing)."""
        if requested == 0:
            self.plain_steps_left = max(0, self.plain_steps_left - 1)
            self._steps_since_plain = 0
            return
        self._steps_since_plain += 1
        if drafted == 0:
            return
        per_token = draft_seconds / drafted
        self.draft_seconds_per_token += DRAFT_COST_SMOOTHING * (per_token - self.draft_seconds_per_token)
        if self._probe_next and self.plain_steps_left == 0:
            self._probe_next = False
            if accepted == drafted:
                self._backoff = self.config.backoff
        decay = self.config.decay
        self._accepted = decay * self._accepted + accepted
        self._rejected = decay * self._rejected + (1.0 if accepted < drafted else 0.0)

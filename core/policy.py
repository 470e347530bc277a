"""SpeculationPolicy: how many nodes to ask the drafter for, and when not to speculate at all.

Draft length (adaptive): start at ``initial_draft_len``; after a step that accepted the whole
draft, double it (up to ``max_draft_len``); after an early rejection (fewer than half accepted),
halve it (down to ``min_draft_len``); otherwise keep it.

Fall-back: every ``window`` speculative steps, the policy estimates the speed-up of those steps
from measured pass costs: ``tokens_per_step * cost(1) / mean(cost(draft + 1))``. Below 1,
speculation is not paying for this request: the next ``backoff`` steps draft nothing (plain
decoding), then it probes again; each consecutive failure doubles the back-off (up to
``max_backoff``). When the cost of a 1-token pass has never been measured, the policy runs one
plain step to measure it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .cost import PassCostProfile


@dataclass(frozen=True)
class SpeculationConfig:
    initial_draft_len: int = 8
    min_draft_len: int = 1
    max_draft_len: int = 32
    adaptive: bool = True
    fallback: bool = True
    window: int = 4
    backoff: int = 8
    max_backoff: int = 256

    def __post_init__(self) -> None:
        if not 1 <= self.min_draft_len <= self.initial_draft_len <= self.max_draft_len:
            raise ValueError("need 1 <= min_draft_len <= initial_draft_len <= max_draft_len")
        if self.window < 1 or self.backoff < 1 or self.max_backoff < self.backoff:
            raise ValueError("need window >= 1 and 1 <= backoff <= max_backoff")


class SpeculationPolicy:
    def __init__(self, config: SpeculationConfig, cost: PassCostProfile) -> None:
        self.config = config
        self.cost = cost
        self.draft_len = config.initial_draft_len
        self.plain_steps_left = 0  # steps still to decode plainly (fall-back or probe)
        self._backoff = config.backoff
        self._window: list[tuple[int, int]] = []  # (drafted, accepted) of recent speculative steps

    def budget(self) -> int:
        """Nodes to request for the next step; 0 means decode this step plainly."""
        if self.plain_steps_left > 0:
            return 0
        return self.draft_len

    @property
    def falling_back(self) -> bool:
        return self.plain_steps_left > 0

    def observe(self, requested: int, drafted: int, accepted: int) -> None:
        """Record one verify step: ``requested`` budget, ``drafted`` nodes sent, ``accepted`` kept."""
        if requested == 0:
            self.plain_steps_left = max(0, self.plain_steps_left - 1)
            return
        if self.config.adaptive and drafted:
            if accepted == drafted:
                self.draft_len = min(self.config.max_draft_len, self.draft_len * 2)
            elif accepted < drafted / 2:
                self.draft_len = max(self.config.min_draft_len, self.draft_len // 2)
        if not self.config.fallback or drafted == 0:
            return
        self._window.append((drafted, accepted))
        if len(self._window) >= self.config.window:
            self._judge_window()

    def _judge_window(self) -> None:
        one = self.cost.estimate(1) if self.cost.known(1) else None
        if one is None:
            self.plain_steps_left = 1  # measure a plain step first; the window is judged after
            return
        steps = self._window
        self._window = []
        tokens_per_step = sum(accepted + 1 for _, accepted in steps) / len(steps)
        step_cost = sum(self.cost.estimate(drafted + 1) or one for drafted, _ in steps) / len(steps)
        if tokens_per_step * one < step_cost:
            self.plain_steps_left = self._backoff
            self._backoff = min(self.config.max_backoff, self._backoff * 2)
        else:
            self._backoff = self.config.backoff

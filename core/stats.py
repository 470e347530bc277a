"""Stats: what a generation cost and how speculation went. The core returns them; apps print.

Draft **positions** count from 0: position ``i`` holds the draft nodes at depth ``i + 1`` (position 0:
the nodes that continue the context directly). A chain has one node per position; a tree may have
several. ``accepted_by_position[i]`` counts the steps whose accepted path reached position ``i``
(vLLM's ``num_accepted_tokens_per_pos``), ``drafted_by_position[i]`` the draft nodes sent to
verification at position ``i``; they sum to ``accepted_tokens`` and ``drafted_tokens``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence


@dataclass
class Stats:
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0  # prompt tokens restored from the prefix cache, not computed
    generated_tokens: int = 0
    verify_steps: int = 0  # draft -> verify -> accept rounds (one target pass each, but the first
    #                        round after the prefill needs none when its draft is empty)
    target_forward_passes: int = 0  # every target forward pass, the prefill included
    drafted_tokens: int = 0  # draft nodes sent to verification
    accepted_tokens: int = 0  # draft nodes kept
    fallback_steps: int = 0  # steps decoded plainly because speculation did not pay
    accepted_length_histogram: Counter = field(default_factory=Counter)  # accepted per step -> steps
    draft_steps: int = 0  # verify steps whose draft held at least one node (vLLM's num_drafts)
    drafted_by_position: Counter = field(default_factory=Counter)  # position -> draft nodes there
    accepted_by_position: Counter = field(default_factory=Counter)  # position -> steps that accepted it
    draft_s: float = 0.0
    verify_s: float = 0.0
    prefill_s: float = 0.0
    wall_s: float = 0.0
    forced_drafted: int = 0  # draft tokens a constraint's grammar forced (specdraft.constrained.drafter)
    forced_tokens: int = 0  # of those, the ones the target kept
    grammar_s: float = 0.0  # seconds in a constraint's grammar (masks, advancing, forced bytes)
    grammar_resolved: int = 0  # rows a ranking target was asked again: no ranked candidate was allowed
    exact: bool = True  # the backend guarantees speculative == plain decoding (``Model.exact``)
    # The pass cost curve the policy drafted to: tokens in a pass (a power of two) -> median ms, as
    # measured on this model (``Model.cost``, from its load-time probe on) when the generation ended
    pass_cost_ms: dict[int, float] = field(default_factory=dict)

    @classmethod
    def merged(cls, parts: "list[Stats]") -> "Stats":
        """One Stats for several generations (for example the chunks of a long document)."""
        total = cls()
        for part in parts:
            for name in cls.__dataclass_fields__:
                value = getattr(part, name)
                if isinstance(value, Counter):
                    getattr(total, name).update(value)
                elif name == "exact":
                    total.exact = total.exact and value
                elif name == "pass_cost_ms":
                    total.pass_cost_ms = value or total.pass_cost_ms  # the latest curve
                else:
                    setattr(total, name, getattr(total, name) + value)
        return total

    def record_step(self, drafted: int, accepted: int, depths: Sequence[int] | None = None) -> None:
        """One verify step: ``drafted`` draft nodes sent, the first ``accepted`` positions of one path
        kept. ``depths``: each node's depth (1: continues the context; ``Draft.depths``); None: the
        draft was a chain (depths 1..``drafted``)."""
        self.verify_steps += 1
        self.drafted_tokens += drafted
        self.accepted_tokens += accepted
        self.accepted_length_histogram[accepted] += 1
        if drafted:
            self.draft_steps += 1
        self.drafted_by_position.update(depth - 1 for depth in (range(1, drafted + 1) if depths is None else depths))
        self.accepted_by_position.update(range(accepted))

    def position_lists(self) -> tuple[list[int], list[int]]:
        """``(drafted_by_position, accepted_by_position)`` as two lists of the same length, one entry
        per position up to the deepest one drafted (empty when nothing was drafted)."""
        positions = range(max(self.drafted_by_position, default=-1) + 1)
        return [self.drafted_by_position[i] for i in positions], [self.accepted_by_position[i] for i in positions]

    @property
    def mean_accepted_tokens(self) -> float:
        """Draft tokens accepted per verify step (the bonus token not counted)."""
        return self.accepted_tokens / self.verify_steps if self.verify_steps else 0.0

    @property
    def mean_tokens_per_step(self) -> float:
        """Tokens produced per verify step, bonus included (1.0 for plain decoding)."""
        return (self.accepted_tokens + self.verify_steps) / self.verify_steps if self.verify_steps else 0.0

    @property
    def acceptance_rate(self) -> float:
        return self.accepted_tokens / self.drafted_tokens if self.drafted_tokens else 0.0

    @property
    def forward_passes_per_token(self) -> float:
        return self.target_forward_passes / self.generated_tokens if self.generated_tokens else 0.0

    @property
    def tokens_per_s(self) -> float:
        return self.generated_tokens / self.wall_s if self.wall_s > 0 else 0.0

    def to_dict(self) -> dict:
        return {
            "prompt_tokens": self.prompt_tokens,
            "cached_prompt_tokens": self.cached_prompt_tokens,
            "generated_tokens": self.generated_tokens,
            "verify_steps": self.verify_steps,
            "drafted_tokens": self.drafted_tokens,
            "accepted_tokens": self.accepted_tokens,
            "acceptance_rate": round(self.acceptance_rate, 4),
            "mean_accepted_tokens": round(self.mean_accepted_tokens, 4),
            "mean_tokens_per_step": round(self.mean_tokens_per_step, 4),
            "accepted_length_histogram": {str(k): v for k, v in sorted(self.accepted_length_histogram.items())},
            "target_forward_passes": self.target_forward_passes,
            "forward_passes_per_token": round(self.forward_passes_per_token, 4),
            "fallback_steps": self.fallback_steps,
            "draft_s": round(self.draft_s, 4),
            "verify_s": round(self.verify_s, 4),
            "prefill_s": round(self.prefill_s, 4),
            "wall_s": round(self.wall_s, 4),
            "tokens_per_s": round(self.tokens_per_s, 3),
            "forced_drafted": self.forced_drafted,
            "forced_tokens": self.forced_tokens,
            "grammar_s": round(self.grammar_s, 4),
            "grammar_resolved": self.grammar_resolved,
            "exact": self.exact,
            "pass_cost_ms": {str(width): round(ms, 2) for width, ms in sorted(self.pass_cost_ms.items())},
        }

"""EdgeStats: the core ``Stats`` of an edge generation, and what only the edge measures.

The core fields come from the generator's loop (``absorb``) but for the verify steps (``verify_steps``,
``drafted_tokens``, ``accepted_tokens`` and their histograms): those are the verifications the server
answered, which ``EdgeTarget`` records (a token the local model chose while the server was lost is no
verify step). ``target_forward_passes`` are the server's passes over every session of the generation.
The edge's own:

- ``round_trips`` (opens, verifications, appends), ``reconnects``, ``server_losses``;
- ``verified_tokens``/``unverified_tokens``: emitted tokens the server confirmed / the local model
  wrote alone; ``draft_passes``: local model passes; ``side_passes``: those spent off the main chain;
  ``sampled_verifications``: verifications sent with draft distributions (rejection sampling);
- the pipeline, measured: ``in_flight_s`` (verifications in flight), ``overlap_s`` (drafting while one
  was), ``overlap_drafted_tokens`` (tokens drafted then), ``overlap_kept_tokens`` (of those, the ones
  on a branch the answer confirmed), ``overlap_emitted_tokens`` (the ones that became verified output);
- ``final_threshold``: the adaptive trigger's threshold at the end.

``to_dict`` adds the names edge clients read before the core vocabulary (kept as aliases):
``server_forward_passes`` (``target_forward_passes``), ``server_passes_per_token``
(``forward_passes_per_token``), ``verified_per_round_trip`` (verified tokens per verification). The
stats read as a mapping too (``stats["round_trips"]``: ``to_dict``'s entries).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Iterator

from specdraft.stats import Stats

_CORE = tuple(f.name for f in fields(Stats))
_STEPS = {  # what ``Stats.record_step`` counts: recorded by ``EdgeTarget``, not taken from the core loop
    "verify_steps",
    "drafted_tokens",
    "accepted_tokens",
    "accepted_length_histogram",
    "draft_steps",
    "drafted_by_position",
    "accepted_by_position",
}


@dataclass
class EdgeStats(Stats):
    round_trips: int = 0
    verified_tokens: int = 0
    unverified_tokens: int = 0
    reconnects: int = 0
    server_losses: int = 0
    draft_passes: int = 0
    side_passes: int = 0
    sampled_verifications: int = 0
    in_flight_s: float = 0.0
    overlap_s: float = 0.0
    overlap_drafted_tokens: int = 0
    overlap_kept_tokens: int = 0
    overlap_emitted_tokens: int = 0
    final_threshold: float = 0.0

    def absorb(self, core: Stats) -> "EdgeStats":
        """Take the core loop's fields from ``core`` (the generator's ``Stats``), the verify steps excepted
        (module docstring)."""
        for name in _CORE:
            if name in _STEPS:
                continue
            setattr(self, name, getattr(core, name))
        return self

    def to_dict(self) -> dict:
        out = super().to_dict()
        out.update({name: getattr(self, name) for name in self.__dataclass_fields__ if name not in _CORE})
        out.update(
            {
                "in_flight_s": round(self.in_flight_s, 4),
                "overlap_s": round(self.overlap_s, 4),
                "final_threshold": round(self.final_threshold, 4),
                "server_forward_passes": self.target_forward_passes,
                "server_passes_per_token": round(self.forward_passes_per_token, 4),
                "verified_per_round_trip": round(self.verified_tokens / max(1, self.verify_steps), 3),
            }
        )
        return out

    # --- read as a mapping (clients that read the stats dict of before) --------------------------
    def __getitem__(self, name: str) -> Any:
        return self.to_dict()[name]

    def keys(self) -> Iterator[str]:
        return iter(self.to_dict())

"""Prompt lookup: draft what followed the latest earlier occurrence of the context's last n-gram.

Tie-breaks (pinned in tests): the longest n-gram wins (``max_ngram`` down to ``min_ngram``); among
occurrences of that n-gram, the most recent one whose continuation is non-empty wins; the draft is
the tokens that followed it, up to the budget (a chain, deterministic).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..draft import Draft


OCCURRENCES = ("latest", "first")


@dataclass(frozen=True)
class PromptLookupConfig:
    max_ngram: int = 3
    min_ngram: int = 1
    occurrence: str = "latest"  # which earlier occurrence of the n-gram to copy from

    def __post_init__(self) -> None:
        if not 1 <= self.min_ngram <= self.max_ngram:
            raise ValueError("need 1 <= min_ngram <= max_ngram")
        if self.occurrence not in OCCURRENCES:
            raise ValueError(f"occurrence must be one of {', '.join(OCCURRENCES)}, got {self.occurrence!r}")


def find_continuation(context: np.ndarray, ngram: int, budget: int, occurrence: str = "latest") -> np.ndarray:
    """Tokens after the latest (or first) earlier occurrence of ``context[-ngram:]`` (empty if none)."""
    n = len(context)
    if n <= ngram or budget <= 0:
        return context[:0]
    suffix = context[-ngram:]
    # candidate starts: every window except the suffix itself, whose continuation would be empty
    windows = np.lib.stride_tricks.sliding_window_view(context[:-1], ngram)  # [n - ngram, ngram]
    hits = np.flatnonzero((windows == suffix).all(axis=1))
    if hits.size == 0:
        return context[:0]
    start = int(hits[-1] if occurrence == "latest" else hits[0]) + ngram
    return context[start : start + budget]


class PromptLookupDrafter:
    """Drafts from the context itself (prompt + generated so far). Stateless across steps."""

    def __init__(self, config: PromptLookupConfig = PromptLookupConfig()) -> None:
        self.config = config

    def propose(self, context_ids: Sequence[int], budget: int) -> Draft:
        context = np.asarray(context_ids, dtype=np.int64)
        for ngram in range(self.config.max_ngram, self.config.min_ngram - 1, -1):
            continuation = find_continuation(context, ngram, budget, self.config.occurrence)
            if continuation.size:
                return Draft.chain(continuation.tolist())
        return Draft.empty()

    def observe(self, accepted_len: int) -> None:
        pass

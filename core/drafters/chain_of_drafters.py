"""FirstDraft: several drafters tried in order; the first non-empty draft is proposed.

Every drafter is asked at every step, in order, until one proposes something, so each one sees the
start of the output at its first call (drafters that learn where the output starts rely on that)
and later drafters are only consulted when earlier ones found nothing. ``observe`` reaches the
drafter whose draft was verified.
"""

from __future__ import annotations

from typing import Sequence

from ..draft import Draft
from ..drafter import Drafter


class FirstDraft:
    def __init__(self, drafters: Sequence[Drafter]) -> None:
        if not drafters:
            raise ValueError("FirstDraft needs at least one drafter")
        self.drafters = list(drafters)
        self._started = False
        self._last: Drafter | None = None

    def propose(self, context_ids: Sequence[int], budget: int) -> Draft:
        self._last = None
        if not self._started:  # every drafter sees the output's start
            self._started = True
            drafts = [d.propose(context_ids, budget) for d in self.drafters]
            for drafter, draft in zip(self.drafters, drafts):
                if len(draft):
                    self._last = drafter
                    return draft
            return Draft.empty()
        for drafter in self.drafters:
            draft = drafter.propose(context_ids, budget)
            if len(draft):
                self._last = drafter
                return draft
        return Draft.empty()

    def observe(self, accepted_len: int) -> None:
        if self._last is not None:
            self._last.observe(accepted_len)

"""CopyDrafter: Shallow Aggressive Decoding (Sun et al., 2021) for decoder-only chat models.

The answer to "correct this" / "rewrite this" is mostly the source text. The drafter keeps an
**anchor**: the index in the source of the token the output should produce next. Each step it
drafts the whole rest of the source from the anchor (the engine's budget, chosen from measured
pass cost, caps the length); the target keeps the longest agreeing prefix plus its own next token.

Words: the **output** is what the target generated after the prompt (the drafter learns where it
starts at its first call); the **source** is the token ids of the text being edited.

Rules (pinned in tests):
- In sync: if the output's last token is the source token just before the anchor, draft from the
  anchor. At the start the anchor is 0 (the answer is expected to begin with the source).
- After a divergence (an insertion, deletion or substitution, or a chat lead-in), re-align: look up
  the output's last 3-, 2- and 1-gram in the source and re-anchor right after the longest of them
  that occurs **exactly once** in the source. A repeated n-gram is ambiguous: no anchor.
- Until it re-aligns, draft nothing (plain decoding for that step), or fall back to prompt lookup
  over the whole context when ``fallback_to_prompt_lookup`` is set.
- Never draft past the source's end, and never draft a stop token or anything after one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Collection, Sequence

from specdraft import Draft
from specdraft.drafters import PromptLookupDrafter

NOT_ALIGNED = -1


@dataclass(frozen=True)
class CopyDraftConfig:
    max_ngram: int = 3
    fallback_to_prompt_lookup: bool = False

    def __post_init__(self) -> None:
        if self.max_ngram < 1:
            raise ValueError(f"max_ngram must be >= 1, got {self.max_ngram}")


def unique_anchor(source: Sequence[int], output: Sequence[int], max_ngram: int) -> int:
    """Source index just after the longest suffix n-gram of ``output`` (n = max_ngram..1) that
    occurs exactly once in ``source``; ``NOT_ALIGNED`` if there is none."""
    source = list(source)
    for n in range(min(max_ngram, len(output)), 0, -1):
        gram = list(output[-n:])
        hits = [i for i in range(len(source) - n + 1) if source[i : i + n] == gram]
        if len(hits) == 1:
            return hits[0] + n
    return NOT_ALIGNED


class CopyDrafter:
    """Drafts from ``source_ids`` for one request (see the module docstring for the rules)."""

    def __init__(
        self,
        source_ids: Sequence[int],
        stop_token_ids: Collection[int] = (),
        config: CopyDraftConfig = CopyDraftConfig(),
    ) -> None:
        stops = set(stop_token_ids)
        end = next((i for i, t in enumerate(source_ids) if t in stops), len(source_ids))
        self.source = [int(t) for t in source_ids[:end]]  # never draft a stop token or past it
        self.config = config
        self._output_start: int | None = None
        self._anchor = 0
        self._lookup = PromptLookupDrafter() if config.fallback_to_prompt_lookup else None
        self.realignments = 0  # how often the drafter re-anchored after a divergence

    def anchor_for(self, output: Sequence[int]) -> int:
        """Where the next output token sits in the source, or ``NOT_ALIGNED``."""
        if not output:
            return self._anchor
        if 0 < self._anchor <= len(self.source) and output[-1] == self.source[self._anchor - 1]:
            return self._anchor
        anchor = unique_anchor(self.source, output, self.config.max_ngram)
        if anchor != NOT_ALIGNED:
            self.realignments += 1
        return anchor

    def propose(self, context_ids: Sequence[int], budget: int) -> Draft:
        if self._output_start is None:
            self._output_start = len(context_ids)
        output = context_ids[self._output_start :]
        anchor = self.anchor_for(output)
        if anchor == NOT_ALIGNED or anchor >= len(self.source):
            self._anchor = NOT_ALIGNED if anchor == NOT_ALIGNED else anchor
            if self._lookup is not None and anchor == NOT_ALIGNED:
                return self._lookup.propose(context_ids, budget)
            return Draft.empty()
        draft = self.source[anchor : anchor + budget]
        self._anchor = anchor  # observe() moves it past what the target accepted
        return Draft.chain(draft)

    def observe(self, accepted_len: int) -> None:
        if self._anchor != NOT_ALIGNED:
            # the accepted tokens are source[anchor:anchor+accepted]; the target's bonus token should
            # be source[anchor+accepted]: propose() checks that against the output's last token.
            self._anchor += accepted_len + 1

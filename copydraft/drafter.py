"""CopyDrafter: Shallow Aggressive Decoding (Sun et al., 2021) for decoder-only chat models.

The answer to "correct this" / "rewrite this" is mostly the source text. The drafter keeps an
**anchor**: the index in the source of the token the output should produce next. Each step it
drafts the whole rest of the source from the anchor (the engine's budget, chosen from measured
pass cost, caps the length); the target keeps the longest agreeing prefix plus its own next token.

Words: the **output** is what the target generated after the prompt (the drafter learns where it
starts at its first call); the **source** is the token ids of the text being edited.

Rules (pinned in tests):
- In sync: if what the target kept of the last draft, plus its own next token, continues the
  source, draft on from there. At the start the anchor is 0 (the answer is expected to begin
  with the source).
- After a divergence (an insertion, deletion or substitution, or a chat lead-in), re-align: look up
  the output's last 3-, 2- and 1-gram in the source and re-anchor right after the longest of them
  that occurs **exactly once** in the source. A repeated n-gram is ambiguous: no anchor.
- Right after the target refused source token ``d`` of a chain draft (not of a divergence tree: one
  tree per refusal), if no unique n-gram re-anchors, the drafter
  does not pick one explanation: with ``divergence_tree`` it drafts a tree whose branches continue
  the source from ``d + 1`` (the token was replaced), ``d`` (something was inserted before it) and
  ``d + 2`` (it and the next were replaced), in that order, sharing the node budget; the target
  verifies them all in the same pass and keeps whichever is right (or none).
- Otherwise, until it re-aligns, draft nothing (plain decoding for that step), or fall back to
  prompt lookup over the whole context when ``fallback_to_prompt_lookup`` is set.
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
    divergence_tree: bool = True
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
        self._drafted_from: list[int] = []  # source index each branch of the last draft started at
        self._accepted = 0  # draft tokens the target kept last step
        self._lookup = PromptLookupDrafter() if config.fallback_to_prompt_lookup else None
        self.realignments = 0  # how often the drafter re-anchored on a unique n-gram

    def _follow(self, output: Sequence[int]) -> tuple[int | None, int | None]:
        """After the last step: (anchor if still in sync, else None; the refused source index, if any).

        The kept tokens are ``source[start:start + accepted]`` for the branch that was taken; the
        target's own next token is in sync when it equals the source token after them.
        """
        accepted = self._accepted
        kept = list(output[len(output) - 1 - accepted : len(output) - 1])
        refused = None
        for start in self._drafted_from:
            if self.source[start : start + accepted] != kept:
                continue
            at = start + accepted
            if at < len(self.source) and output[-1] == self.source[at]:
                return at + 1, None
            refused = at if refused is None else refused
        return None, refused

    def anchors_for(self, output: Sequence[int]) -> list[int]:
        """Where in the source the next output token may come from: one anchor when aligned,
        several for a divergence tree, none when not aligned."""
        anchor, refused = self._follow(output) if self._drafted_from else (None, None)
        if anchor is not None:
            return [anchor]
        unique = unique_anchor(self.source, output, self.config.max_ngram)
        if unique != NOT_ALIGNED:
            self.realignments += 1
            return [unique]
        if refused is not None and self.config.divergence_tree and len(self._drafted_from) == 1:
            return [a for a in (refused + 1, refused, refused + 2) if a < len(self.source)]
        return []

    def propose(self, context_ids: Sequence[int], budget: int) -> Draft:
        first = self._output_start is None
        if first:
            self._output_start = len(context_ids)
        output = context_ids[self._output_start :]
        anchors = [0] if first else self.anchors_for(output)
        anchors = [a for a in anchors if a < len(self.source)]
        self._drafted_from = anchors
        self._accepted = 0
        if not anchors:
            if self._lookup is not None:
                return self._lookup.propose(context_ids, budget)
            return Draft.empty()
        if len(anchors) == 1:
            return Draft.chain(self.source[anchors[0] : anchors[0] + budget])
        length = max(1, budget // len(anchors))
        return Draft.from_branches([self.source[a : a + length] for a in anchors], max_nodes=budget)

    def observe(self, accepted_len: int) -> None:
        self._accepted = accepted_len

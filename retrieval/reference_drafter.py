"""ReferenceDrafter: LLMA (Yang et al. 2023, "Inference with Reference") with token trees.

A RAG answer quotes its retrieved documents. The drafter finds the longest suffix n-gram of the
**output** (what the target generated after the prompt; the drafter learns where it starts at its
first ``propose`` call) inside the **references** (the token ids of the retrieved documents) and
drafts the tokens that follow it. Where several places continue the n-gram differently it drafts a
token tree of their continuations instead of picking one.

Rules (pinned in tests):

1. **Longest n-gram first.** The n-gram is the output's last ``n`` tokens for the largest ``n`` from
   ``max_ngram`` down to ``min_ngram`` that has a **match**: an occurrence in a reference followed by
   at least one more token of that reference. With ``match_prompt_tail`` the n-gram may reach back
   into the prompt when the output is shorter than ``n``. No match (or an output shorter than
   ``min_ngram``): an empty draft, and the target decodes that step plainly.
2. **Continuations.** Each match (reference ``r``, start ``p``) gives the tokens after it, up to the
   budget and the reference's end. Identical continuations are one **branch**; its **count** is how
   many matches gave it.
3. **Branch order**: more matches whose continuation starts with the branch's first token first; then
   the branch whose earliest match is in the earlier reference (the order the references were
   given, for example retrieval rank); then the earlier position in that reference. The first
   ``max_branches`` branches are kept (a continuation that is a prefix of another is still a branch).
4. **Tree and budget.** The kept branches are merged on shared prefixes (``TokenTrie``), each adding
   its count to the nodes on its path. The draft is the ``budget`` nodes of highest priority
   ``weight * depth_decay ** (depth - 1)``, ties to the shallower node, then to the earlier branch,
   each node's parent before it. So the best-supported branch runs deepest: with counts 3 and 1 and
   ``depth_decay`` 0.8, the first branch's nodes down to depth 5 (priority 3 * 0.8^4 = 1.23) come
   before the second branch's first node (1.0). Branches with equal counts share the budget evenly,
   depth by depth, the earlier branch taking the odd node. ``max_branches=1`` gives LLMA's chain.

``min_ngram`` defaults to 2: a single token (``the``, a comma) occurs all over a few retrieved
documents and what follows it there is mostly a guess, while every drafted token widens the
target's pass (which costs real time on a CPU); two tokens already pin a quoted span, and after a
divergence the drafter re-anchors one token later than with 1.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Sequence

from specdraft import Draft

from .suffix_index import SuffixIndex, SuffixMatch
from .token_trie import TokenTrie


@dataclass(frozen=True)
class ReferenceDraftConfig:
    """``max_ngram`` / ``min_ngram``: the longest and shortest output suffix looked up;
    ``max_branches``: distinct continuations kept; ``depth_decay``: how fast a branch's priority
    falls with depth (1 = by match count alone); ``match_prompt_tail``: let the n-gram reach into the
    prompt while the output is shorter than it."""

    max_ngram: int = 8
    min_ngram: int = 2
    max_branches: int = 4
    depth_decay: float = 0.8
    match_prompt_tail: bool = False

    def __post_init__(self) -> None:
        if not 1 <= self.min_ngram <= self.max_ngram:
            raise ValueError(f"need 1 <= min_ngram <= max_ngram, got {self.min_ngram}, {self.max_ngram}")
        if self.max_branches < 1:
            raise ValueError(f"max_branches must be >= 1, got {self.max_branches}")
        if not 0.0 < self.depth_decay <= 1.0:
            raise ValueError(f"depth_decay must be in (0, 1], got {self.depth_decay}")


@dataclass(frozen=True)
class Branch:
    """One distinct continuation: its tokens, how many matches gave it, and its earliest match."""

    tokens: tuple[int, ...]
    count: int
    reference: int  # index of the reference of the earliest match
    position: int  # where that match's continuation starts in the reference


@dataclass(frozen=True)
class ReferenceLookup:
    """The matched n-gram's length (0: no match) and the kept branches, in branch order."""

    ngram: int
    branches: tuple[Branch, ...]


class ReferenceDrafter:
    """Drafts from ``references`` for one request (rules in the module docstring).

    The references are indexed once, in ``__init__`` (a suffix array over all of them), so each step
    costs a few binary searches, however many references there are and however long.
    """

    def __init__(
        self, references: Sequence[Sequence[int]], config: ReferenceDraftConfig = ReferenceDraftConfig()
    ) -> None:
        self.config = config
        self.index = SuffixIndex.from_sequences(references)
        self._output_start: int | None = None

    def lookup(self, tail: Sequence[int], max_len: int) -> ReferenceLookup:
        """The longest match of ``tail``'s suffix n-grams and its branches of up to ``max_len`` tokens."""
        match = self.index.longest_suffix_match(tail, self.config.max_ngram, self.config.min_ngram)
        if not match or max_len <= 0:
            return ReferenceLookup(0, ())
        return ReferenceLookup(match.ngram, self._branches(match, max_len))

    def _branches(self, match: SuffixMatch, max_len: int) -> tuple[Branch, ...]:
        positions = self.index.positions(match)  # [m] every match
        references, offsets = self.index.locate(positions)  # [m], [m]
        continuations = self.index.continuations(positions, max_len)
        first: dict[tuple[int, ...], tuple[int, int]] = {}  # continuation -> earliest (reference, position)
        counts: Counter[tuple[int, ...]] = Counter()
        for continuation, reference, offset in zip(continuations, references.tolist(), offsets.tolist()):
            counts[continuation] += 1
            first[continuation] = min(first.get(continuation, (reference, offset)), (reference, offset))
        first_token_counts = Counter(continuation[0] for continuation in continuations)  # non-empty: matches
        order = sorted(counts, key=lambda c: (-first_token_counts[c[0]], first[c]))
        return tuple(Branch(c, counts[c], *first[c]) for c in order[: self.config.max_branches])

    def propose(self, context_ids: Sequence[int], budget: int) -> Draft:
        if self._output_start is None:
            self._output_start = len(context_ids)
        if budget <= 0:
            return Draft.empty()
        start = 0 if self.config.match_prompt_tail else self._output_start
        tail = context_ids[max(start, len(context_ids) - self.config.max_ngram) :]
        found = self.lookup(tail, budget)
        if not found.branches:
            return Draft.empty()
        trie = TokenTrie()
        for branch in found.branches:
            trie.add(branch.tokens, branch.count)
        return trie.to_draft(budget, self.config.depth_decay)

    def observe(self, accepted_len: int) -> None:
        pass  # stateless between steps: every step re-matches the output's tail

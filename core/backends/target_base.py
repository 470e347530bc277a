"""SessionTarget: the ``Target`` bookkeeping every backend with a KV cache of its own shares.

A target's committed sequence is split in two: ``_tokens``, whose keys and values the cache holds
(in order), and ``_leading``, the tokens accepted but not yet run through the model (the pending
token last; on llama.cpp also an accepted path that had to be dropped from the cache and is run again
at the front of the next pass). Right after the prefill neither is pending: the prefill's last row
(``_next_logits``) already predicts the first token, so the first verification of an empty draft
costs no pass.

This class holds that state, the checks of the protocol's call order (``RuntimeError`` for a
``verify`` before ``prefill`` or twice without ``commit``), the prefix cache (restore the longest
cached prefix on ``prefill_cached``; offer the sequence on ``close`` when it is consistent: no pass
failed half-way, no verification awaiting its commit) and the pass count. A backend implements only
its passes (``_run_prompt``, ``_run_draft``), its KV crop (``_keep``) and its cache (``_cache_length``,
``_restore``, ``_snapshot``, ``_release``).
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from typing import Any, Sequence

from ..draft import Draft
from ..prefix_cache import PrefixCache, PrefixHit
from ..sampling import TokenChooser
from ..verification import Verification

log = logging.getLogger(__name__)


class SessionTarget(ABC):
    """The ``Target`` protocol over a backend's per-request cache (see the module docstring)."""

    returns_logits = True
    prefill_predicts_next = True

    def __init__(self, model: Any, chooser: TokenChooser = TokenChooser()) -> None:
        self.model = model
        self.chooser = chooser
        self.forward_passes = 0
        self.cached_prompt_tokens = 0  # prompt tokens restored from a prefix cache
        self._tokens: list[int] = []  # the tokens whose keys/values the cache holds, in order
        self._leading: list[int] = []  # accepted tokens not in the cache yet (the pending one last)
        self._next_logits: Any = None  # [vocab] after the prefill, before the first verify
        self._verified: Draft | None = None  # the draft awaiting commit
        self._dirty = False  # a pass failed half-way: the cache may be inconsistent
        self._prefix_cache: PrefixCache | None = None  # offered the sequence on close

    def rank_candidates(self) -> bool:
        return False  # it returns logits: a constraint masks them (``Target.rank_candidates``)

    # --- what a backend implements ----------------------------------------------------------------
    @abstractmethod
    def _cache_length(self) -> int:
        """Positions the cache holds."""

    @abstractmethod
    def _run_prompt(self, tokens: list[int]) -> Any:
        """Run ``tokens`` (a chain) after the cache; returns logits whose last row predicts what follows."""

    @abstractmethod
    def _run_draft(self, draft: Draft, leading: list[int]) -> Any:
        """ONE pass over ``leading`` (a chain) and ``draft`` (its roots hang off the last leading
        token): logits rows for the last leading token (when there is one) and every node, in draft order."""

    @abstractmethod
    def _join(self, first: Any, rows: Any) -> Any:
        """``first`` (a row) stacked on ``rows``."""

    @abstractmethod
    def _keep(self, draft: Draft, path: list[int], first_node: int) -> int:
        """Crop the cache after a verification whose nodes start at ``first_node`` to the accepted
        ``path``; returns how many of the path's tokens it kept (the rest run again next pass)."""

    def _caches_prefixes(self) -> bool:
        """Whether this cache can restore and store prefixes (``_restore``/``_snapshot``)."""
        return True

    @abstractmethod
    def _restore(self, hit: PrefixHit) -> None:
        """Fill the empty cache with the first ``hit.length`` positions of ``hit.entry``."""

    @abstractmethod
    def _snapshot(self, length: int) -> tuple[Any, int]:
        """(the cache's first ``length`` positions as a prefix-cache entry's state, its bytes)."""

    @abstractmethod
    def _release(self) -> None:
        """Free the cache (the target is not used afterwards)."""

    def _check_draft(self, draft: Draft) -> None:
        """Raise ``ValueError`` for a draft this backend cannot verify in one pass (before any state changes)."""

    # --- the protocol -----------------------------------------------------------------------------
    @property
    def context_length(self) -> int:
        return self._cache_length() + len(self._leading)

    @property
    def max_length(self) -> int:
        return self.model.max_length

    def prefill(self, context_ids: Sequence[int]) -> None:
        self._prefill(context_ids, None)

    def prefill_cached(self, context_ids: Sequence[int], cache: PrefixCache, store: bool = True) -> int:
        """``prefill`` from a copy of the longest prefix ``cache`` holds; on ``close`` the sequence
        is offered to ``cache`` unless ``store`` is False (see ``specdraft.prefix_cache``). Returns the
        tokens restored."""
        cached = self._prefill(context_ids, cache)
        if not store:
            self._prefix_cache = None
        return cached

    def _prefill(self, context_ids: Sequence[int], cache: PrefixCache | None) -> int:
        if not context_ids:
            raise ValueError("the context must hold at least one token")
        if self._cache_length() or self._leading:
            raise RuntimeError("prefill() starts a sequence; this target already holds one")
        ids = [int(t) for t in context_ids]
        cached = 0
        if cache is not None and self._caches_prefixes():
            self._prefix_cache = cache
            hit = cache.lookup(ids, limit=len(ids) - 1)  # the last token runs: its logits come next
            if hit is not None:
                self._dirty = True
                self._restore(hit)
                self._dirty = False
                cached = hit.length
        self._tokens = ids
        self._next_logits = self._counted(self._run_prompt, ids[cached:])[-1]
        self.cached_prompt_tokens = cached
        return cached

    def _counted(self, run, *args) -> Any:
        """One forward pass: counted, and the cache marked inconsistent until it has finished."""
        self.forward_passes += 1
        self._dirty = True
        result = run(*args)
        self._dirty = False
        return result

    def verify(self, draft: Draft) -> Verification:
        if self._verified is not None:
            raise RuntimeError("verify() twice without commit()")
        if self._next_logits is None and not self._leading:
            raise RuntimeError("verify() before prefill()")
        self._check_draft(draft)
        position = self.context_length  # where row 0's token goes
        self._verified = draft
        first = self._next_logits
        if first is None:
            logits = self._counted(self._run_draft, draft, list(self._leading))
        elif len(draft):  # first step: the prefill already predicted row 0
            logits = self._join(first, self._counted(self._run_draft, draft, []))
        else:
            logits = first[None]
        return Verification.from_logits(logits, draft, position, self.chooser)

    def commit(self, path: Sequence[int], next_token: int) -> None:
        if self._verified is None:
            raise RuntimeError("commit() without verify()")
        draft, self._verified = self._verified, None
        self._tokens += self._leading  # run by the verification: in the cache now
        path = [int(i) for i in path]
        kept = self._keep(draft, path, len(self._tokens))
        accepted = [draft.tokens[i] for i in path]
        self._tokens += accepted[:kept]
        self._leading = [*accepted[kept:], int(next_token)]
        self._next_logits = None

    def close(self) -> None:
        cache, self._prefix_cache = self._prefix_cache, None
        if cache is not None:
            self._offer(cache)
        self._release()
        self._tokens = []

    def _offer(self, cache: PrefixCache) -> None:
        """Store the committed sequence in ``cache`` when it is consistent (nothing half-run, no
        verification awaiting its commit). A failure to store never fails the request."""
        length = len(self._tokens)
        if self._dirty or self._verified is not None or length != self._cache_length() or not cache.wants(self._tokens):
            return
        try:
            state, nbytes = self._snapshot(length)
            cache.insert(self._tokens, state, nbytes)
        except Exception:  # pragma: no cover - e.g. out of memory while compacting
            log.warning("could not store a prefix of %d tokens", length, exc_info=True)

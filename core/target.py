"""The Target protocol: the model whose output specdraft reproduces, with its per-request cache.

A target holds one sequence. Its committed context ends in a **pending** token: the last token
accepted, not yet run through the model. ``verify`` runs the pending token and the whole draft
in ONE forward pass and returns a ``Verification`` (the target's own choice per row, and its
logits where the backend has them; see ``specdraft.verification`` for the row convention);
``commit`` keeps the cache of the accepted path and makes the bonus token the new pending token.
(Right after the prefill there is no pending token: the prefill's last position already predicts
the first row.) A target chooses its own tokens with the ``TokenChooser`` it was created with.

Backends: transformers on CPU/CUDA (``specdraft.backends.transformers``), llama.cpp
(``specdraft.backends.llama_cpp``), both on ``specdraft.backends.target_base.SessionTarget``; engine
and remote targets implement the same calls. The conformance suite
(``tests/core/test_target_conformance.py``) runs every implementation through the same checks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, Sequence

from .draft import Draft
from .verification import Verification

if TYPE_CHECKING:
    from .prefix_cache import PrefixCache


class Target(Protocol):
    @property
    def context_length(self) -> int:
        """Committed tokens, the pending one included."""
        ...

    @property
    def max_length(self) -> int:
        """Longest context the model accepts (its position limit)."""
        ...

    @property
    def max_branches(self) -> int:
        """Most root-to-leaf branches one verification takes (drafts are pruned to fit)."""
        ...

    @property
    def returns_logits(self) -> bool:
        """Whether ``verify`` returns logits (needed to verify drafts that carry distributions by
        rejection sampling; without them such drafts are verified by sample-and-compare)."""
        ...

    def rank_candidates(self) -> bool:
        """Ask every later ``verify`` for ``Verification.from_ranked`` rows (each row's likeliest tokens
        in rank order, and the target's own choice among given tokens on request): what constrained
        decoding needs from a target that returns no logits. False where the target cannot (one that
        returns logits needs nothing more; a choice-only one then refuses constraints)."""
        ...

    @property
    def prefill_predicts_next(self) -> bool:
        """Whether the first ``verify`` after ``prefill`` of an empty draft is free (no pass, no
        round trip): the prefill's own pass already chose the next token. The generator then
        decodes the first step plainly (``SpeculationConfig.plain_first_step``)."""
        ...

    @property
    def forward_passes(self) -> int:
        """Forward passes this target has run (the prefill included)."""
        ...

    def prefill(self, context_ids: Sequence[int]) -> None:
        """Start the sequence from ``context_ids`` (the first ``verify`` predicts what follows)."""
        ...

    def prefill_cached(self, context_ids: Sequence[int], cache: "PrefixCache", store: bool = True) -> int:
        """``prefill(context_ids)`` starting from the longest prefix of it that ``cache`` (the model's
        prefix cache, ``specdraft.prefix_cache``) holds: at least the last token is always run, for the
        logits that predict what follows. Returns how many tokens came from the cache. On ``close``
        the target offers the sequence it then holds (prompt and committed answer) to ``cache`` if that
        sequence is consistent and ``store`` is True. A target without a cache of its own here (an
        engine's, a remote server's) implements it as a miss: it prefills and returns 0."""
        ...

    def verify(self, draft: Draft) -> Verification:
        """The target's verdict on the pending token and every draft node, in one pass."""
        ...

    def commit(self, path: Sequence[int], next_token: int) -> None:
        """Keep the accepted ``path`` (draft node indices) and make ``next_token`` pending."""
        ...

    def close(self) -> None:
        """Release what the sequence holds (its cache). The target is not used afterwards."""
        ...


class CacheElsewhere:
    """For targets whose KV cache lives elsewhere (a serving engine, a remote server): ``prefill_cached``
    is a miss, a plain ``prefill`` with nothing restored or offered."""

    def prefill(self, context_ids: Sequence[int]) -> None:  # implemented by the target
        raise NotImplementedError

    def prefill_cached(self, context_ids: Sequence[int], cache: "PrefixCache", store: bool = True) -> int:
        self.prefill(context_ids)
        return 0

    def rank_candidates(self) -> bool:
        return False  # only choices (a target that can rank overrides this)

"""The Drafter protocol: every source of drafts (input copy, retrieved spans, datastore, cache,
on-device model, another model) implements exactly this.

A drafter instance serves one request: it may keep state between calls (a KV cache, an alignment
pointer into a source text), and the generator creates or receives a fresh one per request.
"""

from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

from .draft import Draft


@runtime_checkable
class Drafter(Protocol):
    def propose(self, context_ids: Sequence[int], budget: int) -> Draft:
        """Propose a draft continuing ``context_ids`` with at most ``budget`` nodes (may be empty).

        The first call of a request gets the prompt alone (with ``budget`` 0 when the generator
        decodes the first step plainly), so a drafter may learn there where the output starts."""
        ...

    def observe(self, accepted_len: int) -> None:
        """Told, after verification, how many of the proposed nodes the target accepted."""
        ...


class NoDrafter:
    """Drafts nothing: the generator then runs plain autoregressive decoding."""

    def propose(self, context_ids: Sequence[int], budget: int) -> Draft:
        return Draft.empty()

    def observe(self, accepted_len: int) -> None:
        pass

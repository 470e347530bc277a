"""The Target protocol: the model whose output specdraft reproduces, with its per-request cache.

A target holds one sequence. Its committed context ends in a **pending** token: the last token
accepted, not yet run through the model. ``verify`` runs the pending token and the whole draft
in ONE forward pass and returns a row of logits per position (see ``specdraft.acceptance`` for
the row convention); ``commit`` keeps the cache of the accepted path and makes the bonus token
the new pending token. (Right after the prefill there is no pending token: the prefill's last
position already predicts the first row.) Backends: transformers on CPU/CUDA (``specdraft.transformers_backend``);
remote and other backends implement the same three calls.
"""

from __future__ import annotations

from typing import Protocol, Sequence

import torch

from .draft import Draft


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
    def forward_passes(self) -> int:
        """Forward passes this target has run (the prefill included)."""
        ...

    def prefill(self, context_ids: Sequence[int]) -> None:
        """Start the sequence from ``context_ids`` (the first ``verify`` predicts what follows)."""
        ...

    def verify(self, draft: Draft) -> torch.Tensor:
        """Logits ``[1 + len(draft), vocab]`` for the pending token and every draft node, one pass."""
        ...

    def commit(self, path: Sequence[int], next_token: int) -> None:
        """Keep the accepted ``path`` (draft node indices) and make ``next_token`` pending."""
        ...

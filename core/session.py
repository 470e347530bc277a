"""The Session protocol: one sequence's KV cache on a model that runs here (``Model.new_session``).

A session is the state a caller keeps across calls to run a model step by step outside the
generator: a draft model's cache between drafting steps (``specdraft.drafters.DraftModelDrafter``),
an iterative RAG answer that cuts its cache back when its documents change, an on-device drafter.
It holds the keys and values of the tokens fed so far, in order; ``truncate`` rolls back.

Every backend's model implements ``new_session``. A model that keeps no sequence state on this
machine (a serving engine's, a remote verify server's) raises ``SessionsUnavailableError``: callers
catch it (for example iterative RAG refuses such a model with a clear message) instead of probing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, Sequence, TypeAlias

import numpy as np

if TYPE_CHECKING:
    import torch

# Logits as the backend computes them: a torch tensor (transformers, the fast path; on the model's
# device) or a numpy array (llama.cpp). ``isinstance(row, np.ndarray)`` tells them apart; nothing
# else is ever returned, so callers never probe for methods.
Logits: TypeAlias = "torch.Tensor | np.ndarray"


class SessionsUnavailableError(ValueError):
    """``new_session`` of a model that keeps no KV cache on this machine (an engine's, a remote server's)."""


class Session(Protocol):
    def __len__(self) -> int:
        """Tokens whose keys and values the session holds."""
        ...

    def feed(self, tokens: Sequence[int], parents: Sequence[int] | None = None, all_logits: bool = True) -> Logits:
        """Run ``tokens`` after what the session holds (``parents``: None or a chain; transformers
        sessions also take a token tree) and keep their keys and values. Returns logits
        ``[len(tokens), vocab]`` (only the last row, ``[1, vocab]``, when ``all_logits`` is False):
        ``Logits``, a torch tensor (transformers, fast path) or a numpy array (llama.cpp)."""
        ...

    def truncate(self, length: int) -> None:
        """Keep the first ``length`` tokens (``length <= len(self)``)."""
        ...

    def close(self) -> None:
        """Release the cache (its memory, a pooled context). The session is not used afterwards."""
        ...

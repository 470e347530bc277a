"""``LlamaRuntime``: what a session, a target and the exactness probe need of a llama.cpp model.

``LlamaCppModel`` implements it; the modules that run passes on its contexts (``target``,
``exactness``) are written against this protocol, so they never import the model module that
creates them (no import cycle).
"""

from __future__ import annotations

import threading
from typing import Protocol

from ...cost import PassCostProfile
from ...model import Tokenizer
from .library import LlamaContext


class LlamaRuntime(Protocol):
    lock: threading.Lock  # one forward pass at a time: the cores are shared
    cost: PassCostProfile  # every timed pass is recorded here

    @property
    def tokenizer(self) -> Tokenizer:
        """The model's tokenizer (read-only here, so the model may declare its own ``Tokenizer`` class)."""
        ...

    @property
    def max_length(self) -> int:
        """Tokens per context."""
        ...

    @property
    def vocab_size(self) -> int:
        """Width of a row of logits."""
        ...

    def acquire_context(self) -> LlamaContext:
        """An empty context of the model (a pooled one, or a new one)."""
        ...

    def release_context(self, context: LlamaContext) -> None:
        """Hand ``context`` back (pooled or freed); the caller never uses it again."""
        ...

"""The two frozen configurations of iterative RAG.

``IterativeRAGConfig``: how often to retrieve (``stride`` generated tokens), with which query (the
last ``query_tokens`` tokens of question + answer, decoded to text), how many documents go into
the prompt (``docs_in_prompt``), the answer's length limit, the instruction that heads the prompt,
and ``retrieval_timeout_s``: the seconds one retriever call may take before the answer ends with a
``RetrieverError`` naming the retriever (None: no limit).

``SpeculativeRetrievalConfig`` (RaLMSpec): ``enabled``; ``max_strides``, the most strides answered
from the cache before a verification (``os3`` on: the OS^3 scheduler picks the stride count from 1
to ``max_strides``; off: always ``max_strides``); ``async_verify``: verify on a worker thread while
the model keeps generating; ``prefetch_k``: each verified query's top ``prefetch_k`` documents enter
the cache (at most ``MAX_PREFETCH_K``, the retrievers' candidate count: up to there a query's top
documents do not depend on how many are asked for); ``os3_window``: the timings OS^3 averages, and the guesses compared
before it may go plain (its acceptance estimate looks back over ``OS3Config.guesses`` guesses); ``prior_acceptance``:
the estimate before any round, and one pseudo-guess after; ``allow_plain`` (with ``os3``): OS^3 may choose
to retrieve a stride plainly (synchronous search, then the stride with the true documents) when that
is expected to be faster than speculating (cheap retrieval, frequent wrong guesses; ``os3``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .dense import DenseConfig

__all__ = ["INSTRUCTION", "MAX_PREFETCH_K", "IterativeRAGConfig", "SpeculativeRetrievalConfig"]

MAX_PREFETCH_K = DenseConfig.candidates  # up to there a query's top documents do not depend on k
INSTRUCTION = "Answer the question using the document below. Keep the answer short."


@dataclass(frozen=True)
class IterativeRAGConfig:
    stride: int = 4
    query_tokens: int = 32
    docs_in_prompt: int = 1
    max_new_tokens: int = 64
    instruction: str = INSTRUCTION
    retrieval_timeout_s: float | None = None

    def __post_init__(self) -> None:
        for name in ("stride", "query_tokens", "docs_in_prompt", "max_new_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        timeout = self.retrieval_timeout_s
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0
        ):
            raise ValueError(f"retrieval_timeout_s must be a number > 0 or None, got {timeout!r}")


@dataclass(frozen=True)
class SpeculativeRetrievalConfig:
    enabled: bool = True
    max_strides: int = 4
    os3: bool = True
    async_verify: bool = True
    prefetch_k: int = 4
    os3_window: int = 5
    prior_acceptance: float = 0.5
    allow_plain: bool = True

    def __post_init__(self) -> None:
        for name in ("max_strides", "prefetch_k", "os3_window"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if self.prefetch_k > MAX_PREFETCH_K:
            raise ValueError(f"prefetch_k must be at most {MAX_PREFETCH_K}, got {self.prefetch_k}")
        if not 0.0 <= self.prior_acceptance <= 1.0:
            raise ValueError(f"prior_acceptance must lie in [0, 1], got {self.prior_acceptance!r}")

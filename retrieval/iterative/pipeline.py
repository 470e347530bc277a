"""IterativeRAG: the Python entry point of iterative RAG, plain or with speculative retrieval.

``IterativeRAG(model, retriever, collection, config, speculative=None)``;
``generate(question, generation=None) -> IterativeAnswer``; ``stream(question, generation=None) ->
IterativeStream``, which yields ``RetrievalRecord``s (one per stride, before that stride's text)
and ``TextPiece``s (confirmed text only, never taken back), holds the ``IterativeAnswer`` in
``answer`` once iterated, and ``stop()``s early like ``RAGStream``.

``generation`` (``GenerationConfig``): sampling, seed, stop strings, ``ignore_eos`` and the length
limit; None means greedy with ``config.max_new_tokens``. Speculation (``SpeculativeRetrievalConfig``
with ``enabled``) changes how fast the answer comes, never what it is: tokens and per-stride
documents equal plain iterative RAG's (greedy and seeded sampling).

``stats`` (the core's names, ``specdraft.stats.Stats``): ``retrieval_s`` (inside retriever calls, on
any thread), ``retrieval_wait_s`` (the answering thread blocked on a search), ``cache_s``,
``generation_s`` (model passes), ``wall_s`` (the wall clock, from the question to the answer),
``searches`` / ``searched_queries``, ``target_forward_passes``, ``prefill_tokens``, ``replayed_tokens``,
``strides``, ``generated_tokens``; with speculation also ``speculated_strides``, ``overlapped_strides``
(speculated while a verification was running), ``cache_hits``, ``rollbacks``, ``verifications``,
``discarded_tokens``, ``stride_counts`` (the s of each verification), ``async``, ``plain_strides``
(strides OS^3 chose to retrieve plainly, s = 0) and ``plain_cache_hits``.

One OS^3 scheduler (``os3.OS3Scheduler``) serves every answer of an ``IterativeRAG``, so its
estimates (acceptance, stride and retrieval seconds) carry over from one question to the next: a short
answer alone rarely compares enough guesses to decide that plain retrieval is faster. It is
thread-safe; the estimates change only the speed, never an answer. ``scheduler=`` hands in one shared
with other pipelines over the same model and retriever (the service keeps one per index version:
``specdraft.apps.iterative_rag``); None builds one from ``speculative`` on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from specdraft import GenerationConfig, Model
from specdraft.session import SessionsUnavailableError

from ..retriever import Collection, ScoringRetriever
from .answering import Answering, Event
from .config import IterativeRAGConfig, SpeculativeRetrievalConfig
from .plain import answer_plainly
from .records import IterativeAnswer

if TYPE_CHECKING:
    from .os3 import OS3Scheduler

__all__ = ["IterativeRAG", "IterativeStream", "NeedsLocalModel", "keeps_a_session"]


class IterativeStream:
    """Iterate for the events; ``answer`` is set once the iteration ends (``consume()`` does both)."""

    def __init__(self, state: Answering, events: Iterator[Event]) -> None:
        self._state = state
        self._events = events
        self.answer: IterativeAnswer | None = None

    def __iter__(self) -> Iterator[Event]:
        try:
            yield from self._events
        finally:
            self._state.close()
        self.answer = self._state.answer()

    def consume(self) -> IterativeAnswer:
        for _ in self:
            pass
        assert self.answer is not None
        return self.answer

    def stop(self) -> IterativeAnswer:
        """End now with the confirmed answer so far (the session and any worker are released)."""
        if self.answer is None:
            close = getattr(self._events, "close", None)
            if close is not None:
                close()
            self._state.close()
            self.answer = self._state.answer()
        return self.answer


class NeedsLocalModel(ValueError):
    """The model has no session of its own here (``keeps_a_session``): a serving engine's."""


def keeps_a_session(model: Model) -> bool:
    """Whether ``model`` runs here with a KV cache of its own (``Model.new_session``: transformers,
    llama.cpp, the fast path), which iterative RAG cuts back and re-prefills; a serving engine's
    model (``--backend engine``) has none (``SessionsUnavailableError``)."""
    try:
        model.new_session().close()
    except SessionsUnavailableError:
        return False
    return True


class IterativeRAG:
    def __init__(
        self,
        model: Model,
        retriever: ScoringRetriever,
        collection: Collection,
        config: IterativeRAGConfig = IterativeRAGConfig(),
        speculative: SpeculativeRetrievalConfig | None = None,
        scheduler: "OS3Scheduler | None" = None,
    ) -> None:
        """``NeedsLocalModel`` (a ValueError) for a model with no session of its own here (``keeps_a_session``)."""
        if not keeps_a_session(model):
            raise NeedsLocalModel(
                f"iterative RAG needs a model that runs here (transformers or llama-cpp): it cuts the "
                f"answer's KV cache back when documents change; {getattr(model, 'name', model)!r} on the "
                f"{getattr(model, 'backend', 'given')} backend has no session of its own (a serving "
                f"engine keeps it)"
            )
        self.model = model
        self.retriever = retriever
        self.collection = collection
        self.config = config
        self.speculative = speculative
        self._scheduler = scheduler  # OS^3, shared by this pipeline's answers (built on first use when None)

    @property
    def scheduler(self) -> "OS3Scheduler | None":
        """The OS^3 scheduler of this pipeline's speculative answers (None before the first one, unless handed in)."""
        return self._scheduler

    @property
    def speculating(self) -> bool:
        return self.speculative is not None and self.speculative.enabled

    def stream(self, question: str, generation: GenerationConfig | None = None) -> IterativeStream:
        """Start answering (ValueError for an empty question); the work runs as the stream is iterated."""
        generation = generation or GenerationConfig(max_new_tokens=self.config.max_new_tokens)
        state = Answering(self.model, self.retriever, self.collection, self.config, question, generation)
        if self.speculating:
            from .os3 import OS3Scheduler
            from .speculative import answer_speculatively, os3_config

            if self._scheduler is None:
                self._scheduler = OS3Scheduler(os3_config(self.speculative))
            events = answer_speculatively(state, self.speculative, self._scheduler)
        else:
            events = answer_plainly(state)
        return IterativeStream(state, events)

    def generate(self, question: str, generation: GenerationConfig | None = None) -> IterativeAnswer:
        """The whole answer (see ``stream``)."""
        return self.stream(question, generation).consume()

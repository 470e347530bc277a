"""RAGPipeline: question -> retrieve top-k -> prompt with the passages -> speculative generation.

The answer is the target's own (greedy: token for token what plain decoding gives); the drafter
only makes it faster. Drafters (``DRAFTERS``, named in ``drafter_registry``): "reference" (alias
"documents"; LLMA: spans of the retrieved passages and of the question), "datastore" (REST: a corpus
suffix index; needs ``datastore``), "reference+datastore" (the reference drafter, and the datastore
when the passages offer nothing), "prompt-lookup", "none" (plain decoding).

Passages come from a ``Retriever`` (``retrieval.retriever``: usually the ``DocumentIndex``, any
retriever whose hits carry chunks will do): the question's top ``top_k`` hits, best first.
``ask(question)`` returns a ``RAGAnswer``; ``stream(question)`` yields the answer's text pieces as
they are accepted and then holds the same ``RAGAnswer``. Citations and the passage each drafted run
came from: see ``provenance``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Sequence

from specdraft import Drafter, GenerationConfig, Model, SpeculationConfig, SpeculativeGenerator, Stats, Tokenizer
from specdraft.generator import GenerationResult, GenerationStream
from specdraft.text_stream import TextPiece

from .datastore import Datastore, DatastoreDraftConfig
from .drafter_registry import (
    DATASTORE,
    NO_DRAFTER,
    PASSAGES,
    REFERENCE,
    DrafterSpec,
    DraftInputs,
    check_datastore,
    drafter_names,
    parse_drafter,
    require,
)
from .provenance import AnswerSpan, answer_spans, cited
from .reference_drafter import ReferenceDraftConfig
from .retriever import Hit, Retriever

__all__ = ["DRAFTERS", "NO_DRAFTER", "RAG_OFFERS", "RAGAnswer", "RAGConfig", "RAGPipeline", "build_drafter"]

# What a RAG answer offers a drafter: the retrieved passages, and a datastore when one is given (no draft models).
RAG_OFFERS = frozenset({PASSAGES, DATASTORE})
DRAFTERS = drafter_names(RAG_OFFERS)  # none, prompt-lookup, reference, datastore, reference+datastore
# Quoted spans run long and are mostly accepted whole: start with 16-token drafts, allow up to 64 and
# assume a high acceptance until measured (as copydraft does). On qwen2.5-coder-0.5b over 6 RAG
# questions (bench seed 0) this took the decode phase from 1.8x to 2.5x over plain decoding.
RAG_SPECULATION = SpeculationConfig(initial_draft_len=16, max_draft_len=64, prior_alpha=0.8)
INSTRUCTION = (
    "Answer the question using the passages below. Quote the passages where you can and keep the answer short."
)


@dataclass(frozen=True)
class RAGConfig:
    top_k: int = 3
    max_new_tokens: int = GenerationConfig().max_new_tokens  # the core's: `ask` and HTTP answer alike
    instruction: str = INSTRUCTION
    cite_min_words: int = 4
    reference: ReferenceDraftConfig = field(default_factory=ReferenceDraftConfig)
    datastore: DatastoreDraftConfig = field(default_factory=DatastoreDraftConfig)
    speculation: SpeculationConfig = RAG_SPECULATION  # draft lengths and fall-back (see RAG_SPECULATION)

    def __post_init__(self) -> None:
        if self.top_k < 1 or self.max_new_tokens < 1 or self.cite_min_words < 1:
            raise ValueError("top_k, max_new_tokens and cite_min_words must be >= 1")


@dataclass
class RAGAnswer:
    question: str
    answer: str
    citations: list[str]  # chunk ids the answer quotes
    hits: list[Hit]  # what was retrieved, best first
    token_ids: list[int]
    prompt_token_ids: list[int]
    stats: Stats
    pieces: list[TextPiece]
    spans: list[AnswerSpan]  # the answer as runs of one source, drafted runs linked to passages

    def to_dict(self) -> dict:
        """``{"answer", "citations", "token_ids", "stats", "passages", "spans"}`` (JSON-ready)."""
        return {
            "answer": self.answer,
            "citations": self.citations,
            "token_ids": self.token_ids,
            "stats": self.stats.to_dict(),
            "passages": [passage_dict(hit) for hit in self.hits],
            "spans": [span.to_dict() for span in self.spans],
        }


def passage_dict(hit: Hit) -> dict:
    """A retrieved passage as the answer's JSON lists it: ``{"id", "document", "score", "text"}``."""
    return {"id": hit.chunk.id, "document": hit.chunk.doc_id, "score": round(hit.score, 4), "text": hit.chunk.text}


class RAGStream:
    """Iterate to receive the answer's ``TextPiece``s as the target accepts tokens; ``hits`` is known
    from the start, ``answer`` once the iteration ends (``consume()`` does both)."""

    def __init__(self, question: str, hits: list[Hit], stream: GenerationStream, config: RAGConfig) -> None:
        self.question = question
        self.hits = hits
        self._stream = stream
        self._config = config
        self.answer: RAGAnswer | None = None

    def __iter__(self) -> Iterator[TextPiece]:
        yield from self._stream
        assert self._stream.result is not None
        self.answer = self._finish(self._stream.result)

    def consume(self) -> RAGAnswer:
        for _ in self:
            pass
        assert self.answer is not None
        return self.answer

    def stop(self) -> RAGAnswer:
        """End the answer now with what was generated so far (see ``GenerationStream.stop``)."""
        if self.answer is None:
            self.answer = self._finish(self._stream.stop())
        return self.answer

    def _finish(self, result: GenerationResult) -> RAGAnswer:
        return RAGAnswer(
            question=self.question,
            answer=result.text.strip(),
            citations=cited(result.text, self.hits, self._config.cite_min_words),
            hits=self.hits,
            token_ids=result.token_ids,
            prompt_token_ids=result.prompt_token_ids,
            stats=result.stats,
            pieces=result.pieces,
            spans=answer_spans(result.pieces, self.hits),
        )


def rag_drafter(name: str, datastore: Datastore | None, vocab_size: int | None = None) -> DrafterSpec:
    """``name`` parsed for a RAG answer (one of ``DRAFTERS`` or an alias); ValueError unless it is one
    and has the datastore it needs, built with a vocabulary of ``vocab_size`` tokens (the target
    tokenizer's; None: not checked)."""
    spec = parse_drafter(name, offers=RAG_OFFERS)
    require(spec, RAG_OFFERS)
    check_datastore(spec, datastore, vocab_size)
    return spec


def build_drafter(
    kind: str,
    tokenizer: Tokenizer,
    references: Sequence[str],
    datastore: Datastore | None,
    config: RAGConfig = RAGConfig(),
) -> Drafter | None:
    """A fresh drafter named ``kind`` (one of ``DRAFTERS``) for one RAG answer: the reference drafter
    over ``references`` (texts, tokenized with ``tokenizer``), the datastore drafter over ``datastore``,
    both (reference first), prompt lookup, or None for "none" (plain decoding)."""
    spec = rag_drafter(kind, datastore, tokenizer.vocab_size)
    inputs = DraftInputs(
        tokenizer, 0, references, datastore, reference=config.reference, datastore_draft=config.datastore
    )
    return spec.build(inputs)


class RAGPipeline:
    """Retrieve, prompt, generate. ``index``: the ``Retriever`` the passages come from (a
    ``DocumentIndex``, or any retriever whose hits carry the chunks' texts); ``drafter``: one of
    ``DRAFTERS`` or an alias (``datastore`` for the datastore kinds)."""

    def __init__(
        self,
        index: Retriever,
        target: Model,
        drafter: str = REFERENCE,
        datastore: Datastore | None = None,
        config: RAGConfig = RAGConfig(),
    ) -> None:
        rag_drafter(drafter, datastore, target.tokenizer.vocab_size)
        self.index = index
        self.target = target
        self.drafter = drafter
        self.datastore = datastore
        self.config = config

    def prompt_ids(self, question: str, hits: list[Hit]) -> list[int]:
        passages = "\n\n".join(f"[{i + 1}] {h.chunk.text}" for i, h in enumerate(hits))
        content = f"{self.config.instruction}\n\nPassages:\n{passages}\n\nQuestion: {question}"
        if self.target.has_chat_template:
            return self.target.encode_chat([{"role": "user", "content": content}])
        return self.target.encode(f"{content}\nAnswer:")

    @staticmethod
    def references(question: str, hits: list[Hit]) -> list[str]:
        """What the reference drafter drafts from: the passages in retrieval order, then the question
        (answers often restate it: "The nickname for the American Hockey League is ...")."""
        return [hit.chunk.text for hit in hits] + [question]

    def make_drafter(self, question: str, hits: list[Hit]) -> Drafter | None:
        """A fresh drafter for one question (None: plain decoding), drafting from ``references``."""
        return build_drafter(
            self.drafter, self.target.tokenizer, self.references(question, hits), self.datastore, self.config
        )

    def ask(self, question: str) -> RAGAnswer:
        """Retrieve, prompt and generate; the whole answer. ValueError for an empty question."""
        return self.stream(question).consume()

    def stream(self, question: str) -> RAGStream:
        """Retrieve and prompt now (ValueError for an empty question or a prompt longer than the
        model takes); generation runs as the returned stream is iterated."""
        if not isinstance(question, str) or not question.strip():
            raise ValueError("the question must be a non-empty string")
        hits = self.index.search([question], self.config.top_k)[0]
        prompt_ids = self.prompt_ids(question, hits)
        if len(prompt_ids) >= self.target.max_length:
            raise ValueError(
                f"the prompt with {len(hits)} passages has {len(prompt_ids)} tokens; the model takes at most "
                f"{self.target.max_length - 1}: ask with fewer passages (top_k)"
            )
        config = GenerationConfig(max_new_tokens=self.config.max_new_tokens)
        generation = SpeculativeGenerator(self.target, self.config.speculation).stream(
            prompt_ids, self.make_drafter(question, hits), config
        )
        return RAGStream(question, hits, generation, self.config)

"""RAGPipeline: question -> retrieve top-k -> prompt with the passages -> speculative generation.

The answer is the target's own (greedy: token for token what plain decoding gives); the drafter
only makes it faster. Drafters: "reference" (LLMA: spans of the retrieved passages and of the
question), "datastore"
(REST: a corpus suffix index; needs ``datastore``), "reference+datastore" (the reference drafter,
and the datastore when the passages offer nothing), "prompt-lookup", "none" (plain decoding).

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
from specdraft.drafters import PromptLookupDrafter
from specdraft.drafters.chain_of_drafters import FirstDraft
from specdraft.generator import GenerationResult, GenerationStream
from specdraft.text_stream import TextPiece

from .datastore import Datastore, DatastoreDraftConfig, DatastoreDrafter
from .provenance import AnswerSpan, answer_spans, cited
from .reference_drafter import ReferenceDraftConfig, ReferenceDrafter
from .retriever import Hit, Retriever

NO_DRAFTER = "none"  # plain decoding
PROMPT_LOOKUP = "prompt-lookup"
# The drafters that need nothing retrieved; the general drafter names (specdraft.apps.model_pool) start with them.
GENERAL_DRAFTERS = (NO_DRAFTER, PROMPT_LOOKUP)
DRAFTERS = (NO_DRAFTER, "reference", "datastore", "reference+datastore", PROMPT_LOOKUP)
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


def check_drafter(kind: str, datastore: Datastore | None, vocab_size: int | None = None) -> None:
    """ValueError unless ``kind`` is one of ``DRAFTERS`` and has the datastore it needs, built with a
    vocabulary of ``vocab_size`` tokens (the target tokenizer's; None: not checked)."""
    if kind not in DRAFTERS:
        raise ValueError(f"unknown drafter {kind!r}: choose one of {', '.join(DRAFTERS)}")
    if "datastore" in kind and datastore is None:
        raise ValueError(f"drafter {kind!r} needs a datastore")
    if "datastore" in kind and None not in (vocab_size, datastore.vocab_size) and datastore.vocab_size != vocab_size:
        raise ValueError(
            f"the datastore was built with the tokenizer of {datastore.tokenizer or 'another model'} "
            f"({datastore.vocab_size} tokens); the target's has {vocab_size}: build one with this model's tokenizer"
        )


def build_drafter(
    kind: str,
    tokenizer: Tokenizer,
    references: Sequence[str],
    datastore: Datastore | None,
    config: RAGConfig = RAGConfig(),
) -> Drafter | None:
    """A fresh drafter of ``kind`` (one of ``DRAFTERS``) for one request: the reference drafter over
    ``references`` (texts, tokenized with ``tokenizer``), the datastore drafter over ``datastore``,
    both (reference first), prompt lookup, or None for "none" (plain decoding)."""
    check_drafter(kind, datastore, tokenizer.vocab_size)
    drafters: list[Drafter] = []
    if "reference" in kind:
        reference_ids = [tokenizer.encode(text) for text in references]
        drafters.append(ReferenceDrafter(reference_ids, config.reference))
    if "datastore" in kind:
        drafters.append(DatastoreDrafter(datastore, config.datastore))
    if kind == "prompt-lookup":
        drafters.append(PromptLookupDrafter())
    if not drafters:
        return None
    return drafters[0] if len(drafters) == 1 else FirstDraft(drafters)


class RAGPipeline:
    """Retrieve, prompt, generate. ``index``: the ``Retriever`` the passages come from (a
    ``DocumentIndex``, or any retriever whose hits carry the chunks' texts); ``drafter``: one of
    ``DRAFTERS`` (``datastore`` for the datastore kinds)."""

    def __init__(
        self,
        index: Retriever,
        target: Model,
        drafter: str = "reference",
        datastore: Datastore | None = None,
        config: RAGConfig = RAGConfig(),
    ) -> None:
        check_drafter(drafter, datastore, target.tokenizer.vocab_size)
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

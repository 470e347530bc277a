"""RAGPipeline: question -> retrieve top-k -> prompt with the passages -> speculative generation.

The answer is the target's own (greedy: token for token what plain decoding gives); the drafter
only makes it faster. Drafters: "reference" (LLMA: spans of the retrieved passages), "datastore"
(REST: a corpus suffix index; needs ``datastore``), "reference+datastore" (the reference drafter,
and the datastore when the passages offer nothing), "prompt-lookup", "none" (plain decoding).

Citations: the retrieved chunks the answer quotes, i.e. that share a run of at least
``cite_min_words`` consecutive words with it, in retrieval order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

from specdraft import Drafter, GenerationConfig, SpeculativeGenerator, Stats, TransformersModel
from specdraft.drafters import PromptLookupDrafter
from specdraft.drafters.chain_of_drafters import FirstDraft
from specdraft.text_stream import TextPiece

from .datastore import Datastore, DatastoreDraftConfig, DatastoreDrafter
from .index import DocumentIndex, Hit
from .reference_drafter import ReferenceDraftConfig, ReferenceDrafter

DRAFTERS = ("none", "reference", "datastore", "reference+datastore", "prompt-lookup")
INSTRUCTION = "Answer the question using the passages below. Quote the passages where you can and keep the answer short."
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class RAGConfig:
    top_k: int = 3
    max_new_tokens: int = 256
    instruction: str = INSTRUCTION
    cite_min_words: int = 4
    reference: ReferenceDraftConfig = field(default_factory=ReferenceDraftConfig)
    datastore: DatastoreDraftConfig = field(default_factory=DatastoreDraftConfig)

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

    def to_dict(self) -> dict:
        return {
            "answer": self.answer,
            "citations": self.citations,
            "token_ids": self.token_ids,
            "stats": self.stats.to_dict(),
            "passages": [{"id": h.chunk.id, "score": round(h.score, 4), "text": h.chunk.text} for h in self.hits],
        }


def _word_ngrams(text: str, n: int) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def cited(answer: str, hits: list[Hit], min_words: int) -> list[str]:
    """Ids of the hits that share a run of ``min_words`` consecutive words with ``answer``."""
    spans = _word_ngrams(answer, min_words)
    return [h.chunk.id for h in hits if spans & _word_ngrams(h.chunk.text, min_words)]


def check_drafter(kind: str, datastore: Datastore | None) -> None:
    """ValueError unless ``kind`` is one of ``DRAFTERS`` and has the datastore it needs."""
    if kind not in DRAFTERS:
        raise ValueError(f"unknown drafter {kind!r}: choose one of {', '.join(DRAFTERS)}")
    if "datastore" in kind and datastore is None:
        raise ValueError(f"drafter {kind!r} needs a datastore")


def build_drafter(
    kind: str, tokenizer, references: Sequence[str], datastore: Datastore | None, config: RAGConfig = RAGConfig()
) -> Drafter | None:
    """A fresh drafter of ``kind`` (one of ``DRAFTERS``) for one request: the reference drafter over
    ``references`` (texts, tokenized with ``tokenizer``), the datastore drafter over ``datastore``,
    both (reference first), prompt lookup, or None for "none" (plain decoding)."""
    check_drafter(kind, datastore)
    drafters: list[Drafter] = []
    if "reference" in kind:
        reference_ids = [tokenizer(text, add_special_tokens=False).input_ids for text in references]
        drafters.append(ReferenceDrafter(reference_ids, config.reference))
    if "datastore" in kind:
        drafters.append(DatastoreDrafter(datastore, config.datastore))
    if kind == "prompt-lookup":
        drafters.append(PromptLookupDrafter())
    if not drafters:
        return None
    return drafters[0] if len(drafters) == 1 else FirstDraft(drafters)


class RAGPipeline:
    def __init__(
        self,
        index: DocumentIndex,
        target: TransformersModel,
        drafter: str = "reference",
        datastore: Datastore | None = None,
        config: RAGConfig = RAGConfig(),
    ) -> None:
        check_drafter(drafter, datastore)
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

    def make_drafter(self, hits: list[Hit]) -> Drafter | None:
        """A fresh drafter for one question (None: plain decoding), drafting from ``hits``' texts."""
        return build_drafter(self.drafter, self.target.tokenizer, [h.chunk.text for h in hits], self.datastore, self.config)

    def ask(self, question: str) -> RAGAnswer:
        if not isinstance(question, str) or not question.strip():
            raise ValueError("the question must be a non-empty string")
        hits = self.index.search(question, self.config.top_k)
        prompt_ids = self.prompt_ids(question, hits)
        config = GenerationConfig(max_new_tokens=self.config.max_new_tokens)
        result = SpeculativeGenerator(self.target).generate(prompt_ids, self.make_drafter(hits), config)
        return RAGAnswer(
            question=question,
            answer=result.text.strip(),
            citations=cited(result.text, hits, self.config.cite_min_words),
            hits=hits,
            token_ids=result.token_ids,
            prompt_token_ids=result.prompt_token_ids,
            stats=result.stats,
            pieces=result.pieces,
        )

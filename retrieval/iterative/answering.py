"""One question being answered: what plain and speculative iterative RAG share.

``Answering`` holds the prompt layout, the ``StrideDecoder``, the text assembler (stop strings),
the records, the counters and ``queries``: the answer's ``QueryMemo`` over the retriever, through
which every search and cache scoring goes, so each distinct query is embedded (prepared) once. Strides: stride ``j``
covers answer tokens ``[j*stride, (j+1)*stride)`` and is generated with the documents retrieved for the query made of
the last ``query_tokens`` tokens of question + answer[:j*stride] (decoded to text). Tokens become **confirmed** once
their stride's documents are known to be the retriever's (at once in plain RAG, after verification in
speculative RAG); only confirmed tokens reach the assembler and the stream, so what is streamed is
never taken back.

An answer ends on EOS (unless ``ignore_eos``), after ``max_new_tokens`` tokens, when the context is
full (or the next stride's documents do not fit: finish reason "length"), or when the confirmed
text contains a stop string (cut before it).
"""

from __future__ import annotations

import secrets
import time
from typing import Iterator, Sequence

from specdraft import GenerationConfig, Model
from specdraft.sampling import TokenChooser
from specdraft.text_stream import TextAssembler, TextPiece

from ..retriever import Collection, Hit, RetrieverError, ScoringRetriever
from .config import IterativeRAGConfig
from .decoder import StrideDecoder
from .prompt import build_layout
from .query_memo import QueryMemo
from .records import IterativeAnswer, RetrievalRecord
from .timeout import call_with_timeout

__all__ = ["Answering", "Event"]

Event = TextPiece | RetrievalRecord


class Answering:
    def __init__(
        self,
        model: Model,
        retriever: ScoringRetriever,
        collection: Collection,
        config: IterativeRAGConfig,
        question: str,
        generation: GenerationConfig,
    ) -> None:
        if not isinstance(question, str) or not question.strip():
            raise ValueError("the question must be a non-empty string")
        self.started = time.perf_counter()
        self.model = model
        self.retriever = retriever
        self.queries = QueryMemo(retriever)  # search and score, each query prepared once
        self.collection = collection
        self.config = config
        self.question = question
        self.generation = generation
        self.layout = build_layout(model, collection, question, config.instruction)
        seed = secrets.randbits(62) if generation.seed is None else generation.seed
        self.decoder = StrideDecoder(model, self.layout, TokenChooser(generation.sampling, seed))
        self.assembler = TextAssembler(model.tokenizer, generation.stop)
        self.eos = frozenset() if generation.ignore_eos else model.eos_token_ids
        self.records: list[RetrievalRecord] = []
        self.pieces: list[TextPiece] = []
        self.confirmed = 0  # answer tokens confirmed
        self.finish_reason = "length"
        self.finished = False  # the confirmed answer has ended
        self.stats: dict = {
            "retrieval_s": 0.0,  # inside retriever calls (search and cache scoring), any thread
            "retrieval_wait_s": 0.0,  # the answering thread waiting for a search
            "cache_s": 0.0,
            "searches": 0,
            "searched_queries": 0,
        }

    # --- queries and retrieval -----------------------------------------------------------------
    def query(self, answer_len: int) -> str:
        """The query of the stride starting at answer token ``answer_len``."""
        ids = (self.layout.query_ids + self.decoder.answer[:answer_len])[-self.config.query_tokens :]
        return self.model.tokenizer.decode(ids)

    def search(self, queries: Sequence[str], k: int) -> tuple[list[list[Hit]], float]:
        """The retriever's results for ``queries`` and the seconds taken (RetrieverError naming the
        retriever when it raises or answers out of shape). Safe to call from a worker thread."""
        start = time.perf_counter()
        try:
            results = call_with_timeout(
                lambda: self.queries.search(list(queries), k), self.config.retrieval_timeout_s, self.retriever.name
            )
        except RetrieverError:
            raise
        except Exception as error:
            raise RetrieverError(self.retriever.name, error) from error
        seconds = time.perf_counter() - start
        if len(results) != len(queries) or any(not hits for hits in results):
            raise RetrieverError(
                self.retriever.name, f"{len(queries)} queries gave {len(results)} result lists (or an empty one)"
            )
        return results, seconds

    def count_search(self, queries: int, seconds: float) -> None:
        self.stats["retrieval_s"] += seconds
        self.stats["searches"] += 1
        self.stats["searched_queries"] += queries

    def top_docs(self, hits: list[Hit]) -> tuple[int, ...]:
        return tuple(hit.doc for hit in hits[: self.config.docs_in_prompt])

    def record(
        self,
        stride: int,
        query: str,
        docs: tuple[int, ...],
        source: str,
        status: str,
        seconds: float,
        start: int,
        guessed: tuple[int, ...] = (),
    ) -> RetrievalRecord:
        ids = tuple(str(self.collection.ids[d]) for d in docs)
        return RetrievalRecord(stride, query, docs, source, status, seconds, ids, start, guessed)  # type: ignore[arg-type]

    # --- generation ----------------------------------------------------------------------------
    def ended_by(self, token: int) -> str | None:
        """Why the answer ends after ``token`` (None: it goes on)."""
        if token in self.eos:
            return "stop"
        if len(self.decoder.answer) >= self.generation.max_new_tokens:
            return "length"
        if self.decoder.context_length >= self.model.max_length:
            return "length"
        return None

    def generate_stride(self, docs: tuple[int, ...]) -> str | None:
        """Generate one stride with ``docs`` in the prompt; the end reason if the answer ended."""
        if not self.decoder.fits(docs):
            return "length"
        self.decoder.begin(docs)
        for _ in range(self.config.stride):
            reason = self.ended_by(self.decoder.step())
            if reason is not None:
                return reason
        return None

    def confirm(self, record: RetrievalRecord, upto: int, end: str | None) -> Iterator[Event]:
        """Confirm ``record``'s stride and its tokens ``answer[confirmed:upto]``; ``end``: the reason
        the answer ended with them (None: it goes on). Yields the record and the released text."""
        self.records.append(record)
        yield record
        for token in self.decoder.answer[self.confirmed : upto]:
            self.confirmed += 1
            if token in self.eos:
                break
            pieces = self.assembler.push(token, "target")
            self.pieces += pieces
            yield from pieces
            if self.assembler.stopped:
                end = "stop"
                break
        if end is not None:
            self.finish(end)

    def finish(self, reason: str) -> None:
        self.finish_reason = reason
        self.finished = True
        del self.decoder.answer[self.confirmed :]

    def tail(self) -> Iterator[TextPiece]:
        """The text the assembler still holds (after the answer ended)."""
        pieces = self.assembler.finish()
        self.pieces += pieces
        yield from pieces

    def answer(self) -> IterativeAnswer:
        stats = dict(self.stats)
        decoder = self.decoder
        stats.update(
            generation_s=decoder.generation_seconds,
            wall_s=time.perf_counter() - self.started,
            target_forward_passes=decoder.passes,
            prefill_tokens=decoder.prefill_tokens,
            replayed_tokens=decoder.replayed_tokens,
            strides=len(self.records),
            generated_tokens=self.confirmed,
        )
        for key, value in stats.items():
            if isinstance(value, float):
                stats[key] = round(value, 6)
        return IterativeAnswer(
            question=self.question,
            text=self.assembler.text,
            token_ids=list(decoder.answer[: self.confirmed]),
            retrievals=list(self.records),
            finish_reason=self.finish_reason,
            stats=stats,
            pieces=list(self.pieces),
        )

    def close(self) -> None:
        if self.decoder.session is not None:
            self.decoder.close()

"""Speculative retrieval (RaLMSpec) over plain iterative RAG, with the same answer.

Stride 0 is retrieved for real (its top ``prefetch_k`` documents fill the cache). Every later
stride is **speculated**: its documents are guessed from the per-request cache (``SpeculativeCache``,
the retriever's own scoring), the decoder checkpoints the boundary, and the stride is generated
with the guess. After ``s`` speculated strides (``s`` from OS^3, ``os3.OS3Scheduler``) their
queries are verified in ONE ``search`` call (each query's embedding, made for the cache, is reused:
``query_memo``). Each verified query's top ``prefetch_k`` documents
enter the cache. Guesses equal to the retriever's top documents are confirmed, in order; at the
first that differs, everything generated from that stride on is dropped, the decoder is restored
to that stride's checkpoint (``StrideDecoder.restore``: the cache plain RAG would hold there), and
the stride is generated again with the retriever's documents. Confirmed strides are streamed
(record, then text); nothing unconfirmed is ever shown.

Plain strides (``allow_plain``): when OS^3 answers 0 (retrieval is cheap against a stride and guesses
are often wrong: ``os3``), the pending guesses are verified first, then the stride is done as plain
iterative RAG does it: a real search of its query on the answering thread, then the stride with the
retriever's documents (record "retriever" / "exact", counted in ``stats["plain_strides"]``). The
estimates stay fresh: the cache's guess for the query is still made and counted in the acceptance
estimate against the true documents, the true top ``prefetch_k`` enter the cache as after a
verification, and the stride's seconds (guess + generation: OS^3's plain stride time) and the
search's are measured. A rollback's seconds (restore + the stride again) go to OS^3 too.

Asynchronous verification (``async_verify``): the batched search runs on a worker thread while the
answering thread speculates up to ``s`` more strides; when the verification returns, a wrong
guess drops those strides too. FAISS and numpy release the GIL in their heavy loops, so the search
and the model's passes really overlap; the wall clock in ``stats`` is the measured one.

Why the answer is plain RAG's: a stride's tokens are kept only once its documents are known to be
the retriever's for its query, and its query depends only on kept tokens; the tokens themselves
come from the same passes in the same order as plain RAG's (``decoder``) and the same chooser
(greedy, or draws keyed by seed and answer position).
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Iterator

from ..retriever import Hit
from .answering import Answering, Event
from .config import SpeculativeRetrievalConfig
from .decoder import Checkpoint
from .os3 import OS3Config, OS3Scheduler
from .spec_cache import SpeculativeCache

__all__ = ["answer_speculatively", "os3_config"]


def os3_config(config: SpeculativeRetrievalConfig) -> OS3Config:
    """The OS^3 scheduler's configuration for ``config``."""
    return OS3Config(
        max_strides=config.max_strides,
        window=config.os3_window,
        prior=config.prior_acceptance,
        asynchronous=config.async_verify,
        enabled=config.os3,
        allow_plain=config.allow_plain,
    )


@dataclass
class _Guess:
    """One speculated stride, waiting for its verification."""

    stride: int
    start: int  # its first answer token
    query: str
    docs: tuple[int, ...]
    checkpoint: Checkpoint
    seconds: float  # the cache lookup
    upto: int  # answer length after it
    ended: str | None  # the answer ended in this stride (if its guess holds)


def answer_speculatively(
    state: Answering, config: SpeculativeRetrievalConfig, scheduler: OS3Scheduler | None = None
) -> Iterator[Event]:
    """Yield confirmed records and text, as plain iterative RAG would (see the module docstring).
    ``scheduler``: an OS^3 scheduler shared with other answers, so its estimates carry over (None:
    a fresh one from ``config``); only the speed depends on it."""
    run = _Speculation(state, config, scheduler)
    try:
        yield from run.run()
    finally:
        run.close()


class _Speculation:
    def __init__(
        self, state: Answering, config: SpeculativeRetrievalConfig, scheduler: OS3Scheduler | None = None
    ) -> None:
        self.state = state
        self.config = config
        self.k = max(state.config.docs_in_prompt, config.prefetch_k)
        self.cache = SpeculativeCache(state.queries)  # scores through the answer's QueryMemo
        self.scheduler = scheduler or OS3Scheduler(os3_config(config))
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="specdraft-verify") if config.async_verify else None
        self.unverified: list[_Guess] = []
        self.inflight: tuple[Future, list[_Guess]] | None = None
        self.end: str | None = None  # the answer, as speculated so far, has ended
        self.next_stride = 0
        state.stats.update(
            speculated_strides=0,
            overlapped_strides=0,
            cache_hits=0,
            rollbacks=0,
            verifications=0,
            discarded_tokens=0,
            plain_strides=0,
            plain_cache_hits=0,
            stride_counts=[],
            async_verify=config.async_verify,
            os3=config.os3,
            allow_plain=config.allow_plain,
        )

    @property
    def s(self) -> int:
        return self.scheduler.strides()

    def run(self) -> Iterator[Event]:
        state = self.state
        yield from self._exact_first_stride()
        while not state.finished:
            s = self.s  # 0: the next stride goes plain, once nothing is pending
            if self.inflight is not None and (
                self.inflight[0].done() or self.end is not None or len(self.unverified) >= s
            ):
                yield from self._settle(*self._collect())
            elif self.unverified and self.inflight is None and (len(self.unverified) >= s or self.end is not None):
                self._submit()
            elif self.end is None and len(self.unverified) < s:
                self._speculate()
            elif s == 0 and self.end is None and self.inflight is None and not self.unverified:
                yield from self._plain_stride()
            else:  # pragma: no cover - every state above makes progress
                raise RuntimeError("speculative retrieval has nothing to do before the answer ended")
        yield from state.tail()

    # --- the stride types ----------------------------------------------------------------------
    def _exact_first_stride(self) -> Iterator[Event]:
        state = self.state
        query = state.query(0)
        hits, seconds = self._search_now(query)
        self.cache.add(hit.doc for hit in hits[: self.config.prefetch_k])
        docs = state.top_docs(hits)
        self.end = state.generate_stride(docs)
        self.next_stride = 1
        yield from state.confirm(
            state.record(0, query, docs, "retriever", "exact", seconds, 0), len(state.decoder.answer), self.end
        )

    def _search_now(self, query: str) -> tuple[list, float]:
        """The real retriever's hits for ``query``, searched now while the answer waits (counted, timed,
        and the seconds given to OS^3 as a plain retrieval's cost)."""
        results, seconds = self.state.search([query], self.k)
        self.state.count_search(1, seconds)
        self.state.stats["retrieval_wait_s"] += seconds
        self.scheduler.observe_retrieval(seconds)
        return results[0], seconds

    def _plain_stride(self) -> Iterator[Event]:
        """Retrieve the next stride for real, then generate it (OS^3 chose 0); keep the estimates fresh."""
        state = self.state
        start = len(state.decoder.answer)
        query = state.query(start)
        hits, seconds = self._search_now(query)  # searched first: its seconds include preparing the query
        true = state.top_docs(hits)
        began = time.perf_counter()
        guess, guess_seconds = self.cache.guess(query, state.config.docs_in_prompt)  # what speculating would have used
        state.stats["cache_s"] += guess_seconds
        state.stats["retrieval_s"] += guess_seconds
        hit = guess == true
        self.scheduler.observe_round(int(hit), 1)
        self.cache.add(doc.doc for doc in hits[: self.config.prefetch_k])
        reprefills = true != state.decoder.docs
        self.end = state.generate_stride(true)
        self.scheduler.observe_stride(time.perf_counter() - began, plain=True, reprefilled=reprefills)
        state.stats["plain_strides"] += 1
        state.stats["plain_cache_hits"] += hit
        stride, self.next_stride = self.next_stride, self.next_stride + 1
        record = state.record(stride, query, true, "retriever", "exact", seconds, start)
        yield from state.confirm(record, len(state.decoder.answer), self.end)

    def _speculate(self) -> None:
        state = self.state
        start = len(state.decoder.answer)
        began = time.perf_counter()
        checkpoint = state.decoder.checkpoint()
        query = state.query(start)
        docs, seconds = self.cache.guess(query, state.config.docs_in_prompt)
        state.stats["cache_s"] += seconds
        state.stats["retrieval_s"] += seconds
        reprefills = docs != state.decoder.docs
        self.end = state.generate_stride(docs)
        self.scheduler.observe_stride(time.perf_counter() - began, reprefilled=reprefills)
        self.unverified.append(
            _Guess(self.next_stride, start, query, docs, checkpoint, seconds, len(state.decoder.answer), self.end)
        )
        self.next_stride += 1
        state.stats["speculated_strides"] += 1
        state.stats["overlapped_strides"] += self.inflight is not None

    # --- verification --------------------------------------------------------------------------
    def _submit(self) -> None:
        batch, self.unverified = self.unverified, []
        queries = [guess.query for guess in batch]
        if self.executor is not None:
            future = self.executor.submit(self.state.search, queries, self.k)
        else:
            future = Future()
            try:
                future.set_result(self.state.search(queries, self.k))
            except BaseException as error:  # re-raised by _collect
                future.set_exception(error)
        self.inflight = (future, batch)
        self.state.stats["stride_counts"].append(len(batch))

    def _collect(self) -> tuple[list[_Guess], list[list[Hit]], float]:
        assert self.inflight is not None
        future, batch = self.inflight
        self.inflight = None
        began = time.perf_counter()
        results, seconds = future.result()
        waited = time.perf_counter() - began
        stats = self.state.stats
        stats["retrieval_wait_s"] += seconds if self.executor is None else waited
        stats["verifications"] += 1
        self.state.count_search(len(batch), seconds)
        self.scheduler.observe_verification(seconds)
        return batch, results, seconds

    def _settle(self, batch: list[_Guess], results: list[list[Hit]], seconds: float) -> Iterator[Event]:
        state = self.state
        for hits in results:
            self.cache.add(hit.doc for hit in hits[: self.config.prefetch_k])
        for i, (guess, hits) in enumerate(zip(batch, results)):
            true = state.top_docs(hits)
            if true == guess.docs:
                state.stats["cache_hits"] += 1
                record = state.record(
                    guess.stride, guess.query, guess.docs, "cache", "confirmed", guess.seconds, guess.start
                )
                yield from state.confirm(record, guess.upto, guess.ended)
                if state.finished:  # a stop string in the confirmed text
                    self.unverified = []
                    return
                continue
            self.scheduler.observe_round(i, i + 1)
            yield from self._roll_back(guess, true, seconds / len(batch))
            return
        self.scheduler.observe_round(len(batch), len(batch))

    def _roll_back(self, guess: _Guess, true: tuple[int, ...], seconds: float) -> Iterator[Event]:
        """Drop ``guess``'s stride and everything after it; generate it again with ``true``."""
        state = self.state
        state.stats["rollbacks"] += 1
        state.stats["discarded_tokens"] += len(state.decoder.answer) - guess.start
        self.unverified = []
        began = time.perf_counter()
        state.decoder.restore(guess.checkpoint, true)
        self.end = state.generate_stride(true)
        self.scheduler.observe_rollback(time.perf_counter() - began)
        self.next_stride = guess.stride + 1
        record = state.record(
            guess.stride, guess.query, true, "retriever", "rolled_back", seconds, guess.start, guess.docs
        )
        yield from state.confirm(record, len(state.decoder.answer), self.end)

    def close(self) -> None:
        if self.executor is not None:
            self.executor.shutdown(wait=False, cancel_futures=True)

"""Speculative retrieval == plain iterative RAG, token for token and document for document: every
retriever, greedy and seeded sampling, synchronous and asynchronous verification, natural cache
misses and misses forced at chosen strides (first, middle, last, every one)."""

import pytest
from iterative_fixtures import QUESTION, Disagreeing, retrievers, salad_collection, same_answer

from specdraft import GenerationConfig
from specdraft.retrieval.iterative import (
    IterativeRAG,
    IterativeRAGConfig,
    RetrievalRecord,
    RetrieverError,
    SpeculativeRetrievalConfig,
)
from specdraft.text_stream import TextPiece

CONFIG = IterativeRAGConfig(stride=3, query_tokens=8, max_new_tokens=15)
GREEDY = GenerationConfig(max_new_tokens=15, ignore_eos=True)
SEEDED = GenerationConfig(max_new_tokens=15, ignore_eos=True, temperature=0.9, top_p=0.95, seed=11)
SYNC = SpeculativeRetrievalConfig(async_verify=False, max_strides=3)
ASYNC = SpeculativeRetrievalConfig(async_verify=True, max_strides=3)


@pytest.fixture(scope="module")
def collection(tokenizer):
    return salad_collection(tokenizer)


@pytest.fixture(scope="module")
def all_retrievers(collection):
    return retrievers(collection)


@pytest.fixture(scope="module")
def plain_answers(tiny_model, collection, all_retrievers):
    return {
        (kind, name): IterativeRAG(tiny_model, retriever, collection, CONFIG).generate(QUESTION, generation)
        for kind, retriever in all_retrievers.items()
        for name, generation in (("greedy", GREEDY), ("seeded", SEEDED))
    }


@pytest.mark.parametrize("kind", ["dense", "hnsw", "bm25"])
@pytest.mark.parametrize("sampling", ["greedy", "seeded"])
@pytest.mark.parametrize("speculative", [SYNC, ASYNC], ids=["sync", "async"])
def test_speculative_equals_plain(tiny_model, collection, all_retrievers, plain_answers, kind, sampling, speculative):
    generation = GREEDY if sampling == "greedy" else SEEDED
    answer = IterativeRAG(tiny_model, all_retrievers[kind], collection, CONFIG, speculative).generate(
        QUESTION, generation
    )
    same_answer(answer, plain_answers[(kind, sampling)])
    stats = answer.stats
    assert answer.retrievals[0].status == "exact"
    assert stats["speculated_strides"] >= len(answer.retrievals) - 1
    statuses = [r.status for r in answer.retrievals[1:]]
    assert statuses.count("confirmed") == stats["cache_hits"] and statuses.count("rolled_back") == stats["rollbacks"]


@pytest.mark.parametrize("kind", ["dense", "hnsw", "bm25"])
@pytest.mark.parametrize("where", ["first", "middle", "last", "every"])
def test_forced_cache_misses_roll_back_to_the_same_answer(
    tiny_model, collection, all_retrievers, plain_answers, kind, where
):
    plain = plain_answers[(kind, "greedy")]
    n = len(plain.retrievals)
    strides = {"first": [1], "middle": [n // 2], "last": [n - 1], "every": list(range(1, n))}[where]
    wrong = [plain.retrievals[i].query for i in strides]
    modes = {
        "first": (SYNC,),
        "middle": (ASYNC,),
        "last": (SYNC,),
        "every": (ASYNC,) if kind != "dense" else (SYNC, ASYNC),
    }[where]
    for speculative in modes:
        retriever = Disagreeing(all_retrievers[kind], wrong)
        answer = IterativeRAG(tiny_model, retriever, collection, CONFIG, speculative).generate(QUESTION, GREEDY)
        same_answer(answer, plain)
        for i in strides:
            record = answer.retrievals[i]
            assert record.status == "rolled_back" and record.source == "retriever"
            assert record.guessed and record.guessed != record.docs
        if where == "every":
            assert answer.stats["cache_hits"] == 0 and answer.stats["rollbacks"] == n - 1


@pytest.mark.parametrize("kind", ["bm25"])
def test_forced_misses_with_seeded_sampling(tiny_model, collection, all_retrievers, plain_answers, kind):
    plain = plain_answers[(kind, "seeded")]
    wrong = [r.query for r in plain.retrievals[1::2]]
    for speculative in (SYNC, ASYNC):
        retriever = Disagreeing(all_retrievers[kind], wrong)
        answer = IterativeRAG(tiny_model, retriever, collection, CONFIG, speculative).generate(QUESTION, SEEDED)
        same_answer(answer, plain)


def test_a_miss_back_to_the_previous_document_replays_its_run(tiny_model, collection, all_retrievers, plain_answers):
    """When the retriever keeps the document the previous stride had but the cache guessed another,
    the previous run's passes are replayed (same shapes as plain RAG's), and the answer holds."""
    for kind in ("dense", "hnsw", "bm25"):
        plain = plain_answers[(kind, "greedy")]
        repeats = [i for i in range(1, len(plain.docs)) if plain.docs[i] == plain.docs[i - 1]]
        if repeats:
            break
    assert repeats, "the fixture should have a stride that keeps its document"
    retriever = Disagreeing(all_retrievers[kind], [plain.retrievals[i].query for i in repeats])
    answer = IterativeRAG(tiny_model, retriever, collection, CONFIG, SYNC).generate(QUESTION, GREEDY)
    same_answer(answer, plain)
    assert answer.stats["replayed_tokens"] > 0


def test_async_verification_overlaps_generation(tiny_model, collection, all_retrievers, plain_answers):
    plain = plain_answers[("dense", "greedy")]
    retriever = Disagreeing(all_retrievers["dense"], [plain.retrievals[2].query], delay=0.15)
    speculative = SpeculativeRetrievalConfig(async_verify=True, max_strides=2, os3=False)
    answer = IterativeRAG(tiny_model, retriever, collection, CONFIG, speculative).generate(QUESTION, GREEDY)
    same_answer(answer, plain)
    assert any(name.startswith("specdraft-verify") for name in retriever.threads)
    stats = answer.stats
    searched = 0.15 * stats["searches"]
    assert stats["retrieval_s"] >= searched
    assert stats["overlapped_strides"] >= 1  # strides generated while a verification ran
    # so the answering thread did not wait out every search: it waited less than the searches took,
    # both read on the same clock with the same per-search overheads (the strides overlapped take
    # milliseconds on a tiny model, so against the sleeps alone the margin was within those
    # overheads: 0.603 s waited against 0.600 s of sleeps in one run)
    assert stats["retrieval_wait_s"] < stats["retrieval_s"]


def test_stream_shows_only_confirmed_work(tiny_model, collection, all_retrievers, plain_answers):
    plain = plain_answers[("bm25", "greedy")]
    retriever = Disagreeing(all_retrievers["bm25"], [r.query for r in plain.retrievals[1:]])
    stream = IterativeRAG(tiny_model, retriever, collection, CONFIG, ASYNC).stream(QUESTION, GREEDY)
    events = list(stream)
    records = [e for e in events if isinstance(e, RetrievalRecord)]
    assert [r.docs for r in records] == plain.docs
    assert "".join(e.text for e in events if isinstance(e, TextPiece)) == plain.text
    assert stream.answer.stats["discarded_tokens"] > 0


def test_stop_string_and_early_stop(tiny_model, collection, all_retrievers, plain_answers):
    plain = plain_answers[("dense", "greedy")]
    stop = plain.text[7:10]
    generation = GenerationConfig(max_new_tokens=15, ignore_eos=True, stop=(stop,))
    rag = IterativeRAG(tiny_model, all_retrievers["dense"], collection, CONFIG)
    cut_plain = rag.generate(QUESTION, generation)
    for speculative in (SYNC, ASYNC):
        cut = IterativeRAG(tiny_model, all_retrievers["dense"], collection, CONFIG, speculative).generate(
            QUESTION, generation
        )
        same_answer(cut, cut_plain)
        assert cut.finish_reason == "stop"
    stream = IterativeRAG(tiny_model, all_retrievers["dense"], collection, CONFIG, ASYNC).stream(QUESTION, GREEDY)
    iterator = iter(stream)
    next(iterator)
    next(iterator)
    partial = stream.stop()
    assert plain.token_ids[: len(partial.token_ids)] == partial.token_ids


def test_a_failing_verification_names_the_retriever(tiny_model, collection, all_retrievers):
    class FailsLater:
        name = "flaky"

        def __init__(self, inner):
            self.inner, self.calls = inner, 0

        def search(self, queries, k):
            self.calls += 1
            if self.calls > 1:
                raise ConnectionError("index went away")
            return self.inner.search(queries, k)

        def score(self, query, docs):
            return self.inner.score(query, docs)

    for speculative in (SYNC, ASYNC):
        rag = IterativeRAG(tiny_model, FailsLater(all_retrievers["dense"]), collection, CONFIG, speculative)
        with pytest.raises(RetrieverError, match="'flaky' failed: ConnectionError: index went away"):
            rag.generate(QUESTION, GREEDY)


def test_a_retriever_that_hangs_mid_answer_times_out_with_its_name(tiny_model, collection, all_retrievers):
    """With ``retrieval_timeout_s``, a search that does not come back ends the answer with a
    RetrieverError naming the retriever, plain and speculative (sync and async), never a hang."""
    import dataclasses
    import threading

    release = threading.Event()

    class HangsLater:
        name = "sleepy"

        def __init__(self, inner):
            self.inner, self.calls = inner, 0

        def search(self, queries, k):
            self.calls += 1
            if self.calls > 1:
                release.wait(30)
            return self.inner.search(queries, k)

        def score(self, query, docs):
            return self.inner.score(query, docs)

    config = dataclasses.replace(CONFIG, retrieval_timeout_s=0.5)
    try:
        for speculative in (None, SYNC, ASYNC):
            rag = IterativeRAG(tiny_model, HangsLater(all_retrievers["dense"]), collection, config, speculative)
            with pytest.raises(RetrieverError, match="'sleepy' failed: did not answer within 0.5 s"):
                rag.generate(QUESTION, GREEDY)
    finally:
        release.set()


def test_retrieval_timeout_must_be_positive() -> None:
    for bad in (0, -1.0, True, "1"):
        with pytest.raises(ValueError, match="retrieval_timeout_s"):
            IterativeRAGConfig(retrieval_timeout_s=bad)

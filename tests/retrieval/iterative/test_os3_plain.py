"""OS^3's plain choice (issue 11): the scheduler answers 0 ("retrieve this stride plainly") exactly
when a plain stride, ``1 / (a + r)``, is expected to settle more strides per second than the best
speculation round, and only once the acceptance estimate rests on ``window`` compared guesses; the
pipeline then retrieves that stride for real, and the answer is still plain RAG's, token for token
and document for document."""

import pytest
from iterative_fixtures import QUESTION, Disagreeing, retrievers, salad_collection, same_answer

from specdraft import GenerationConfig
from specdraft.retrieval.iterative import IterativeRAG, IterativeRAGConfig, SpeculativeRetrievalConfig
from specdraft.retrieval.iterative.os3 import OS3Config, OS3Scheduler, expected_strides, plain_seconds, round_seconds


def scheduler(
    rounds,
    a,
    b,
    r=None,
    asynchronous=False,
    max_strides=4,
    window=5,
    allow_plain=True,
    enabled=True,
    p=None,
    guesses=20,
    prior=0.5,
):
    """With ``r``: a plain retrieval of ``r`` seconds and a plain stride of ``p`` (``a`` when None) measured."""
    s = OS3Scheduler(
        OS3Config(
            max_strides=max_strides,
            window=window,
            prior=prior,
            asynchronous=asynchronous,
            enabled=enabled,
            allow_plain=allow_plain,
            guesses=guesses,
        )
    )
    for matched, compared in rounds:
        s.observe_round(matched, compared)
    s.observe_stride(a)
    s.observe_verification(b)
    if r is not None:
        s.observe_retrieval(r)
        s.observe_stride(a if p is None else p, plain=True)
    return s


def best_rate(g, a, b, asynchronous, max_strides):
    return max(expected_strides(s, g) / round_seconds(s, g, a, b, asynchronous) for s in range(1, max_strides + 1))


@pytest.mark.parametrize("asynchronous", [False, True])
def test_cheap_retrieval_and_wrong_guesses_go_plain(asynchronous):
    # every guess wrong: a round costs a stride, the verification and the regenerated stride
    assert scheduler([(0, 1)] * 5, a=0.34, b=0.005, r=0.005, asynchronous=asynchronous).strides() == 0
    # the measured case of issue 11: BM25 5 ms against a 340 ms stride, 85% of guesses right
    assert scheduler([(17, 20)] * 5, a=0.34, b=0.005, r=0.005, asynchronous=asynchronous).strides() == 0


def test_expensive_retrieval_or_right_guesses_keep_speculating():
    assert scheduler([(5, 5)] * 5, a=0.01, b=1.0, r=1.0, max_strides=6).strides() == 6
    assert scheduler([(5, 5)] * 5, a=0.34, b=0.05, r=0.05, asynchronous=True).strides() >= 1  # all overlapped
    # ... but not where a search costs 1.5% of a stride: the estimate keeps the prior as one guess,
    # and a 1-in-40 miss costs more strides than speculation saves searches
    assert scheduler([(5, 5)] * 5, a=0.34, b=0.005, r=0.005, asynchronous=True).strides() == 0
    # a tie (synchronous, all right (a prior of 1 keeps g at 1), s*r == b) speculates
    assert scheduler([(1, 1)] * 5, a=0.1, b=0.02, r=0.02, max_strides=1, prior=1.0).strides() == 1


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize(
    "rounds,a,b,r",
    [
        ([(0, 1)] * 5, 0.1, 0.05, 0.05),
        ([(3, 4)] * 5, 0.1, 0.02, 0.01),
        ([(9, 10)] * 5, 0.2, 0.3, 0.3),
        ([(1, 2)] * 5, 0.05, 0.2, 0.1),
        ([(4, 4)] * 5, 0.3, 0.01, 0.002),
    ],
)
def test_zero_exactly_when_plain_is_faster(asynchronous, rounds, a, b, r):
    s = scheduler(rounds, a, b, r, asynchronous)
    g = s.acceptance  # its formula: tests/retrieval/iterative/test_os3.py
    plain_faster = 1.0 / plain_seconds(a, r) > best_rate(g, a, b, asynchronous, 4)
    assert (s.strides() == 0) == plain_faster
    off = scheduler(rounds, a, b, r, asynchronous, allow_plain=False)
    assert off.strides() >= 1 and (s.strides() == 0 or s.strides() == off.strides())


def test_plain_needs_window_guesses_a_measured_retrieval_and_os3():
    assert scheduler([(0, 1)] * 4, a=0.34, b=0.005, r=0.005).strides() >= 1  # 4 compared guesses < window
    assert scheduler([(2, 3), (1, 2)], a=0.34, b=0.005, r=0.005).strides() == 0  # 5 guesses in two rounds
    assert scheduler([(0, 1)] * 5, a=0.34, b=0.005).strides() >= 1  # no plain retrieval measured
    assert scheduler([(0, 1)] * 5, a=0.34, b=0.005, r=0.005, allow_plain=False).strides() >= 1
    assert scheduler([(0, 1)] * 5, a=0.34, b=0.005, r=0.005, enabled=False).strides() == 4
    fresh = OS3Scheduler(OS3Config(max_strides=4))
    assert fresh.strides() == fresh.initial == 2  # nothing measured: OS^3's initial guess


def test_a_plain_stride_is_measured_once_only_where_plain_could_win():
    """Until a plain stride is measured, OS^3 takes one where even a free stride's plain rate, 1/r,
    beats speculation, and never where retrieval is expensive."""

    def unmeasured(rounds, a, b, r):
        s = OS3Scheduler(OS3Config(max_strides=4, window=5, asynchronous=True))
        for matched, compared in rounds:
            s.observe_round(matched, compared)
        s.observe_stride(a)
        s.observe_verification(b)
        s.observe_retrieval(r)
        return s

    cheap = unmeasured([(5, 5)] * 5, a=0.1, b=0.02, r=0.036)  # all right, retrieval cheap: speculation wins on a = p
    assert cheap.strides() == 0  # ... but plain, with a stride free of the verification beside it, might: measure it
    cheap.observe_stride(0.1, plain=True)
    assert cheap.strides() >= 1  # measured at a: speculation wins
    assert unmeasured([(5, 5)] * 5, a=0.01, b=1.0, r=1.0).strides() >= 1  # expensive retrieval: never measured


def test_a_contended_speculated_stride_goes_plain():
    """llama.cpp on 2 cores (issue 11's run): a verification on the worker thread slows the speculated
    strides beside it (a = 0.13 s) while a plain stride takes p = 0.1 s; a 36 ms retrieval that
    speculation hides then does not pay for the slowdown."""
    rounds = [(9, 10)] * 5
    contended = scheduler(rounds, a=0.13, b=0.08, r=0.036, asynchronous=True, p=0.1)
    assert contended.strides() == 0
    assert scheduler(rounds, a=0.1, b=0.08, r=0.036, asynchronous=True, p=0.1).strides() >= 1  # no slowdown: speculate


def test_an_expensive_rollback_weighs_on_speculation():
    """A rollback that re-prefills (c = 0.6 s against a 0.1 s stride) makes wrong guesses cost more
    than RaLMSpec's regenerated stride; measured, it decides."""
    rounds = [(4, 5)] * 5
    cheap_rollbacks = scheduler(rounds, a=0.1, b=0.1, r=0.1, asynchronous=True)
    assert cheap_rollbacks.strides() >= 1
    costly = scheduler(rounds, a=0.1, b=0.1, r=0.1, asynchronous=True)
    costly.observe_rollback(0.6)
    assert costly.strides() == 0


def test_before_any_rollback_its_cost_is_a_stride_that_re_prefilled():
    """A rollback always re-prefills; until one is measured, c is the measured re-prefilling strides' mean."""

    def choice(reprefilled, rollback=None):
        s = scheduler([(4, 5)] * 5, a=0.1, b=0.2, r=0.2, asynchronous=True, p=0.3)
        s.observe_stride(0.6, reprefilled=reprefilled)  # a = 0.35 either way
        if rollback is not None:
            s.observe_rollback(rollback)
        return s.strides()

    assert choice(reprefilled=False) >= 1  # RaLMSpec's c = a
    assert choice(reprefilled=True) == 0  # c = 0.6, foreseen before any rollback
    assert choice(reprefilled=True, rollback=0.1) >= 1  # a measured rollback replaces the estimate
    g = 0.8
    assert round_seconds(2, g, a=0.1, b=0.1, asynchronous=False, c=0.6) == pytest.approx(0.2 + 0.1 + (1 - g**2) * 0.6)
    assert round_seconds(2, g, a=0.1, b=0.1, asynchronous=True, c=0.6) == pytest.approx(
        g**2 * 0.2 + (1 - g**2) * (0.2 + 0.1 + 0.6)
    )


def test_guesses_that_turn_right_bring_speculation_back():
    s = scheduler([(0, 1)] * 5, a=0.1, b=0.05, r=0.05, asynchronous=True, window=3, guesses=3)
    assert s.strides() == 0
    for _ in range(3):  # plain strides still count their cache guess against the true documents
        s.observe_round(1, 1)
    assert s.acceptance == pytest.approx(3.5 / 4) and s.strides() >= 1


# --- end to end: the pipeline goes plain part of the time, and the answer is plain RAG's -----------
CONFIG = IterativeRAGConfig(stride=3, query_tokens=8, max_new_tokens=30)
GREEDY = GenerationConfig(max_new_tokens=30, ignore_eos=True)
SEEDED = GenerationConfig(max_new_tokens=30, ignore_eos=True, temperature=0.9, top_p=0.95, seed=5)


@pytest.fixture(scope="module")
def collection(tokenizer):
    return salad_collection(tokenizer)


@pytest.fixture(scope="module")
def bm25(collection):
    return retrievers(collection)["bm25"]


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("generation", [GREEDY, SEEDED], ids=["greedy", "seeded"])
def test_speculation_that_goes_plain_keeps_the_answer(tiny_model, collection, bm25, asynchronous, generation):
    """A cheap retriever and a cache that guesses wrong at every stride: after ``os3_window`` rounds
    OS^3 retrieves plainly (a plain stride costs ``a + r``; a wrong guess ``2a + b``)."""
    plain = IterativeRAG(tiny_model, bm25, collection, CONFIG).generate(QUESTION, generation)
    n = len(plain.retrievals)
    assert n == 10
    wrong = [r.query for r in plain.retrievals]
    speculative = SpeculativeRetrievalConfig(async_verify=asynchronous, max_strides=3, os3_window=2)
    answer = IterativeRAG(tiny_model, Disagreeing(bm25, wrong), collection, CONFIG, speculative).generate(
        QUESTION, generation
    )
    same_answer(answer, plain)
    stats = answer.stats
    assert stats["plain_strides"] >= 1 and stats["plain_cache_hits"] == 0  # every guess was wrong
    assert stats["rollbacks"] >= 2  # window (2) guesses compared before plain was considered
    statuses = [r.status for r in answer.retrievals]
    assert statuses.count("exact") == 1 + stats["plain_strides"]
    assert statuses.count("rolled_back") == stats["rollbacks"] and statuses.count("confirmed") == stats["cache_hits"]
    assert stats["plain_strides"] + stats["rollbacks"] + stats["cache_hits"] == n - 1
    # one query searched per plain stride, the first stride and each verified guess (asynchronously,
    # guesses speculated behind a wrong one are dropped unverified)
    searched = stats["searched_queries"] - 1 - stats["plain_strides"]
    assert stats["rollbacks"] + stats["cache_hits"] <= searched <= stats["speculated_strides"]

    off = SpeculativeRetrievalConfig(async_verify=asynchronous, max_strides=3, os3_window=2, allow_plain=False)
    never = IterativeRAG(tiny_model, Disagreeing(bm25, wrong), collection, CONFIG, off).generate(QUESTION, generation)
    same_answer(never, plain)
    assert never.stats["plain_strides"] == 0 and never.stats["rollbacks"] == n - 1


def test_plain_strides_keep_filling_the_cache_and_counting_hits(tiny_model, collection, bm25):
    """Guesses wrong only at the first strides: plain strides then see the cache guess right (counted),
    and the answer is plain's whatever the mix."""
    plain = IterativeRAG(tiny_model, bm25, collection, CONFIG).generate(QUESTION, GREEDY)
    wrong = [r.query for r in plain.retrievals[:4]]
    speculative = SpeculativeRetrievalConfig(async_verify=False, max_strides=3, os3_window=2)
    answer = IterativeRAG(tiny_model, Disagreeing(bm25, wrong), collection, CONFIG, speculative).generate(
        QUESTION, GREEDY
    )
    same_answer(answer, plain)
    stats = answer.stats
    assert stats["plain_strides"] + stats["rollbacks"] + stats["cache_hits"] == len(plain.retrievals) - 1
    assert 0 <= stats["plain_cache_hits"] <= stats["plain_strides"]


class UnitCosts(OS3Scheduler):
    """An OS^3 scheduler that counts every measured time as 1 s, so that its choices rest on what the
    answers showed (every guess wrong) and not on this machine's timings: with real timings a plain stride
    measured slow on a loaded machine once made the second answer speculate one stride first."""

    def observe_stride(self, seconds: float, plain: bool = False, reprefilled: bool = False) -> None:
        super().observe_stride(1.0, plain, reprefilled)

    def _observe(self, timings, seconds: float) -> None:
        super()._observe(timings, 1.0)


def shared_scheduler_setup(tiny_model, collection, bm25):
    """Plain's answer, a retriever that disagrees with the cache on plain's queries (``Disagreeing``), a
    synchronous speculative config and one OS^3 scheduler for it (``UnitCosts``)."""
    from specdraft.retrieval.iterative.speculative import os3_config

    plain = IterativeRAG(tiny_model, bm25, collection, CONFIG).generate(QUESTION, GREEDY)
    retriever = Disagreeing(bm25, [r.query for r in plain.retrievals])
    speculative = SpeculativeRetrievalConfig(async_verify=False, max_strides=3, os3_window=2)
    return plain, retriever, speculative, UnitCosts(os3_config(speculative))


def test_a_shared_scheduler_carries_its_estimates_to_the_next_answer(tiny_model, collection, bm25):
    """With one scheduler across answers (``answer_speculatively(..., scheduler=)``), an answer can go
    plain from its first speculative stride on what earlier answers measured; the answer is plain's."""
    from specdraft.retrieval.iterative.answering import Answering
    from specdraft.retrieval.iterative.speculative import answer_speculatively

    plain, retriever, speculative, shared = shared_scheduler_setup(tiny_model, collection, bm25)
    answers = []
    for _ in range(2):
        state = Answering(tiny_model, retriever, collection, CONFIG, QUESTION, GREEDY)
        try:
            list(answer_speculatively(state, speculative, shared))
            answers.append(state.answer())
        finally:
            state.close()
    for answer in answers:
        same_answer(answer, plain)
    assert answers[1].stats["rollbacks"] == 0 and answers[1].stats["plain_strides"] == len(plain.retrievals) - 1


def test_pipelines_handed_one_scheduler_share_its_estimates(tiny_model, collection, bm25):
    """``IterativeRAG(..., scheduler=)``: two pipelines (as two service requests build) handed one
    scheduler use it, so the second answer goes plain from its first speculative stride; both are plain's."""
    plain, retriever, speculative, shared = shared_scheduler_setup(tiny_model, collection, bm25)
    answers = []
    for _ in range(2):
        rag = IterativeRAG(tiny_model, retriever, collection, CONFIG, speculative, scheduler=shared)
        assert rag.scheduler is shared
        answers.append(rag.generate(QUESTION, GREEDY))
    for answer in answers:
        same_answer(answer, plain)
    assert answers[1].stats["rollbacks"] == 0 and answers[1].stats["plain_strides"] == len(plain.retrievals) - 1
    own = IterativeRAG(tiny_model, retriever, collection, CONFIG, speculative)
    assert own.scheduler is None
    same_answer(own.generate(QUESTION, GREEDY), plain)
    assert own.scheduler is not None and own.scheduler is not shared  # built on first use

"""OS^3: the expected strides per verification, the round time model and the chosen stride count."""

import pytest

from specdraft.retrieval.iterative import IterativeRAGConfig, SpeculativeRetrievalConfig
from specdraft.retrieval.iterative.os3 import OS3Config, OS3Scheduler, expected_strides, round_seconds


def test_expected_strides():
    assert expected_strides(1, 0.3) == pytest.approx(1.0)
    assert expected_strides(3, 0.5) == pytest.approx(1 + 0.5 + 0.25)
    assert expected_strides(4, 1.0) == 4.0
    assert expected_strides(4, 0.0) == pytest.approx(1.0)


def test_round_seconds():
    assert round_seconds(2, 1.0, a=1.0, b=3.0, asynchronous=False) == pytest.approx(5.0)
    assert round_seconds(2, 1.0, a=1.0, b=3.0, asynchronous=True) == pytest.approx(3.0)  # overlapped
    assert round_seconds(2, 0.0, a=1.0, b=3.0, asynchronous=True) == pytest.approx(6.0)  # all lost + one regenerated
    assert round_seconds(1, 0.0, a=1.0, b=3.0, asynchronous=False) == pytest.approx(5.0)


def scheduler(g_rounds, a, b, asynchronous=False, max_strides=6, enabled=True):
    s = OS3Scheduler(
        OS3Config(max_strides=max_strides, window=5, prior=0.5, asynchronous=asynchronous, enabled=enabled)
    )
    for matched, compared in g_rounds:
        s.observe_round(matched, compared)
    s.observe_stride(a)
    s.observe_verification(b)
    return s


def estimate(rounds, prior=0.5, guesses=20):
    """The acceptance estimate: the latest rounds until they hold ``guesses`` guesses, plus the prior as one guess."""
    matched = compared = 0
    for m, c in reversed(rounds):
        if compared >= guesses:
            break
        matched, compared = matched + m, compared + c
    return (matched + prior) / (compared + 1)


def brute_force(g, a, b, asynchronous, max_strides):
    rates = {s: expected_strides(s, g) / round_seconds(s, g, a, b, asynchronous) for s in range(1, max_strides + 1)}
    return max(rates, key=lambda s: (rates[s], -s))


def test_expensive_retrieval_and_good_guesses_speculate_far():
    assert scheduler([(5, 5)] * 3, a=0.01, b=1.0).strides() == 6


def test_cheap_retrieval_or_bad_guesses_speculate_one_stride():
    assert scheduler([(5, 5)], a=1.0, b=0.0).strides() == 1
    assert scheduler([(0, 1)] * 5, a=0.1, b=1.0).strides() == 1


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("g_rounds,a,b", [([(3, 4)], 0.1, 0.5), ([(1, 2), (2, 2)], 0.05, 0.2), ([(9, 10)], 0.2, 0.3)])
def test_strides_maximise_expected_strides_per_second(asynchronous, g_rounds, a, b):
    s = scheduler(g_rounds, a, b, asynchronous)
    g = estimate(g_rounds)
    assert s.acceptance == pytest.approx(g)
    assert s.strides() == brute_force(g, a, b, asynchronous, 6)


def test_window_prior_initial_and_disabled():
    s = OS3Scheduler(OS3Config(max_strides=6, window=2, prior=0.7, guesses=6))
    assert s.acceptance == 0.7 and s.strides() == s.initial == 3  # nothing measured yet
    for rounds in [(0, 1), (0, 1), (4, 4), (2, 2)]:
        s.observe_round(*rounds)
    assert s.acceptance == pytest.approx((6 + 0.7) / 7)  # the latest rounds until 6 guesses, + the prior as one
    s.observe_round(0, 1)
    assert s.acceptance == pytest.approx((6 + 0.7) / 8)  # (0, 1), (2, 2), (4, 4): the round that reaches 6 counts whole
    assert scheduler([(0, 1)], a=1.0, b=0.0, enabled=False).strides() == 6
    with pytest.raises(ValueError):
        OS3Config(max_strides=0)


def test_configs_refuse_bad_values():
    for bad in ({"stride": 0}, {"query_tokens": -1}, {"docs_in_prompt": 1.5}, {"max_new_tokens": True}):
        with pytest.raises(ValueError):
            IterativeRAGConfig(**bad)
    for bad in ({"max_strides": 0}, {"prefetch_k": 33}, {"prior_acceptance": 1.5}, {"os3_window": 0}):
        with pytest.raises(ValueError):
            SpeculativeRetrievalConfig(**bad)

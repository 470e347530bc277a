"""benchmarks/llama_pass_cost.py: how rounds of one configuration become one result."""

from __future__ import annotations

import pytest

from benchmarks.llama_pass_cost import best_of


def test_best_of_keeps_each_widths_fastest_round_and_the_fastest_prefill():
    rounds = [
        {"pass_ms": {1: 80.0, 8: 150.0}, "prefill_tok_s": 90.0, "probe": "exact"},
        {"pass_ms": {1: 72.0, 8: 160.0}, "prefill_tok_s": 95.0, "probe": "exact"},
    ]
    result = best_of(rounds)
    assert result["pass_ms"] == {1: 72.0, 8: 150.0}
    assert result["prefill_tok_s"] == 95.0 and result["rounds"] == 2 and result["probe"] == "exact"
    assert result["pass_ratio"] == {1: 1.0, 8: pytest.approx(150 / 72)}
    assert result["marginal_ms_per_token"] == pytest.approx((150 - 72) / 7)
    assert result["prefill_ms_per_token"] == pytest.approx(1000 / 95)


def test_one_round_is_that_round():
    only = {"pass_ms": {1: 50.0, 4: 90.0}, "prefill_tok_s": 120.0}
    assert best_of([only])["pass_ms"] == {1: 50.0, 4: 90.0}

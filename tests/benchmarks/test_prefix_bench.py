"""The prefix-cache benchmark's measurement and report (``benchmarks/prefix_bench.py``), on a tiny
random model: cold and warm prefills of one request, identical outputs, and the written report."""

from __future__ import annotations

import json

import numpy as np
import torch
from tiny_models import make_tiny_model

from benchmarks.prefix_bench import Request, markdown, plot, run_request, summarize
from specdraft.prefix_cache import configure_prefix_cache


def test_cold_and_warm_prefills_of_requests_sharing_a_prefix(tokenizer, tmp_path):
    model = make_tiny_model(tokenizer, seed=21, dtype=torch.float32)
    cache = configure_prefix_cache(model)
    shared = np.random.default_rng(0).integers(5, 300, 40).tolist()
    rows = [run_request(model, Request("s", f"r{i}", shared + [7 + i] * 6, 6), cache) for i in range(3)]
    assert rows[0].cached_tokens == 0 and all(row.cached_tokens >= 40 for row in rows[1:])
    assert all(row.identical and row.cold_ttft_s > 0 and row.warm_ttft_cpu_s >= 0 for row in rows)
    assert run_request(model, Request("s", "turn", shared, 4, measured=False), cache) is None
    [summary] = summarize(rows)
    assert summary["requests"] == 3 and summary["identical_rate"] == 1.0
    assert summary["mean_cached_tokens"] == round(sum(r.cached_tokens for r in rows) / 3, 1)
    result = {
        "model": "tiny",
        "backend": "transformers",
        "max_new_tokens": 6,
        "summaries": [summary],
        "cache": cache.stats(),
        "environment": {"processor": "x86_64", "threads": 1, "time": "now"},
    }
    assert "| s | 3 |" in markdown(result)
    plot(result, tmp_path / "results.png")
    assert (tmp_path / "results.png").stat().st_size > 0
    json.dumps(result)

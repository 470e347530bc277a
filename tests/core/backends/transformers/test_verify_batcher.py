"""VerifyBatcher: concurrent requests' verification passes run as one padded pass, with outputs equal
token for token to each request alone (tiny float64 models), own errors, and untouched neighbours."""

from __future__ import annotations

import threading
import time

import pytest
import torch
from oracle import OracleDrafter, greedy_continuations
from tiny_models import make_tiny_model

from specdraft import ROOT, Draft, GenerationConfig, SpeculativeGenerator
from specdraft.backends.transformers.kv_cache import KVCache
from specdraft.backends.transformers.model import enable_verify_batching
from specdraft.backends.transformers.verify_batch_config import VerifyBatchConfig
from specdraft.drafters import PromptLookupDrafter

PROMPTS = [
    "The quick brown fox jumps over the lazy dog. The dog",
    "Speculative decoding drafts tokens and the target",
    "def add(a, b):\n    return a + b\n\nprint(add(",
    "Grammar correction returns mostly the text it was given, with a few",
    "The dog sleeps. The dog sleeps. The dog",
    "Retrieval augmented generation quotes the documents it",
]
N_NEW = 24


@pytest.fixture()
def model(tokenizer):
    """A private tiny float64 model (the batcher is attached to it, never to the shared one)."""
    return make_tiny_model(tokenizer, seed=0)


class ContextTree:
    """A deterministic tree drafter that ignores any reference: two branches built from the context."""

    def propose(self, context_ids, budget):
        a, b, c = context_ids[-1], context_ids[-2], context_ids[-3]
        return Draft((a, b, c, a), (ROOT, ROOT, 1, 2))

    def observe(self, accepted_len):
        pass


def _drafter(kind: str, reference, vocab: int):
    if kind == "none":
        return None
    if kind == "prompt-lookup":
        return PromptLookupDrafter()
    if kind == "context-tree":
        return ContextTree()
    return OracleDrafter(reference, vocab, kind)  # "partly" (chains) or "tree"


def _jobs(model, tokenizer, sampled: bool):
    """(prompt ids, drafter kind, config) per request: chains, trees and plain decoding mixed."""
    kinds = (
        ["prompt-lookup", "context-tree", "none"]
        if sampled
        else ["partly", "tree", "prompt-lookup", "context-tree", "none"]
    )
    jobs = []
    for i, prompt in enumerate(PROMPTS):
        ids = tokenizer(prompt).input_ids
        config = (
            GenerationConfig(max_new_tokens=N_NEW, temperature=0.8, top_p=0.95, seed=7 + i)
            if sampled
            else GenerationConfig(max_new_tokens=N_NEW)
        )
        jobs.append((ids, kinds[i % len(kinds)], config))
    return jobs


def _generate(model, job, references):
    ids, kind, config = job
    reference = references.get(tuple(ids))
    drafter = _drafter(kind, reference, model.vocab_size)
    return SpeculativeGenerator(model, prefix_cache=False).generate(ids, drafter, config).token_ids


def _concurrently(fn, n: int) -> list:
    results: list = [None] * n
    errors: list = []
    barrier = threading.Barrier(n)

    def run(i):
        try:
            barrier.wait()
            results[i] = fn(i)
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    return results


@pytest.mark.parametrize("sampled", [False, True], ids=["greedy", "seeded-sampling"])
def test_concurrent_generations_equal_each_request_alone(model, tokenizer, sampled):
    jobs = _jobs(model, tokenizer, sampled)
    references = {}
    if not sampled:
        for prompt, (ids, continuation) in greedy_continuations(model, tokenizer, PROMPTS, N_NEW).items():
            references[tuple(ids)] = ids + continuation
    alone = [_generate(model, job, references) for job in jobs]
    if not sampled:  # the lone outputs are the target's own greedy continuations
        assert alone == [references[tuple(ids)][len(ids) :] for ids, _, _ in jobs]
    batcher = enable_verify_batching(model, VerifyBatchConfig(window_ms=50, max_batch=4))
    together = _concurrently(lambda i: _generate(model, jobs[i], references), len(jobs))
    assert together == alone
    assert batcher.batched_passes > 0 and batcher.batched_rows >= 2 * batcher.batched_passes


def _prefilled(model, prompt_ids) -> KVCache:
    cache = KVCache(model.hf_model.config)
    model.forward(cache, prompt_ids, all_logits=False)
    return cache


def _layers(cache: KVCache) -> list[torch.Tensor]:
    return [t.clone() for layer in cache.cache.layers for t in (layer.keys, layer.values)]


def _passes(tokenizer):
    """Per row: prompt ids and one pass (tokens, tree or None): different pasts and widths."""
    tree = Draft((11, 12, 13, 14, 15), (ROOT, ROOT, 0, 1, 3))
    return [
        (tokenizer(PROMPTS[0]).input_ids, [5, 6, 7], None),
        (tokenizer(PROMPTS[1]).input_ids[:3], [9], None),
        (tokenizer(PROMPTS[2]).input_ids, list(tree.tokens), tree),
        (tokenizer(PROMPTS[3]).input_ids, [1, 2], None),
    ]


def _mark_active(batcher, caches) -> None:
    """As if every sequence had passed once already: the leader then waits for all of them."""
    for cache in caches:
        batcher.note_active(cache)


def _one_pass(model, cache, tokens, tree):
    if tree is None:
        return model.forward(cache, tokens)
    positions = [len(cache) + depth - 1 for depth in tree.depths]
    return model.forward(cache, tokens, positions, tree.ancestor_mask())


def _lone_then_batching(model, tokenizer):
    """The rows, their lone passes' logits, a batcher now on, and fresh prefilled caches marked active."""
    rows = _passes(tokenizer)
    lone_caches = [_prefilled(model, ids) for ids, _, _ in rows]
    lone = [_one_pass(model, cache, tokens, tree) for cache, (_, tokens, tree) in zip(lone_caches, rows)]
    batcher = enable_verify_batching(model, VerifyBatchConfig(window_ms=500, max_batch=8))
    caches = [_prefilled(model, ids) for ids, _, _ in rows]
    _mark_active(batcher, caches)
    return rows, lone_caches, lone, batcher, caches


def test_one_padded_pass_gives_each_row_its_own_logits_and_keys(model, tokenizer):
    rows, lone_caches, lone, batcher, caches = _lone_then_batching(model, tokenizer)
    out = _concurrently(lambda i: _one_pass(model, caches[i], rows[i][1], rows[i][2]), len(rows))
    assert batcher.stats() == {"batched_passes": 1, "batched_rows": len(rows), "lone_passes": 0}
    for got, want, cache, lone_cache in zip(out, lone, caches, lone_caches):
        assert got.shape == want.shape and got.dtype == torch.float32
        torch.testing.assert_close(got, want, rtol=0, atol=1e-6)
        assert len(cache) == len(lone_cache)
        for a, b in zip(_layers(cache), _layers(lone_cache)):
            torch.testing.assert_close(a, b, rtol=0, atol=1e-12)


def test_a_bad_row_gets_its_own_error_and_the_others_are_untouched(model, tokenizer):
    rows = _passes(tokenizer)
    lone_caches = [_prefilled(model, ids) for ids, _, _ in rows]
    lone = [_one_pass(model, cache, tokens, tree) for cache, (_, tokens, tree) in zip(lone_caches, rows)]
    bad_cache = _prefilled(model, rows[0][0])
    with pytest.raises(IndexError) as alone_error:
        model.forward(_prefilled(model, rows[0][0]), [1, model.vocab_size + 5])
    batcher = enable_verify_batching(model, VerifyBatchConfig(window_ms=500, max_batch=8))
    caches = [_prefilled(model, ids) for ids, _, _ in rows]
    _mark_active(batcher, [*caches, bad_cache])

    def call(i):
        if i == len(rows):
            with pytest.raises(type(alone_error.value)):
                model.forward(bad_cache, [1, model.vocab_size + 5])
            return "raised"
        return _one_pass(model, caches[i], rows[i][1], rows[i][2])

    out = _concurrently(call, len(rows) + 1)
    assert out[-1] == "raised" and len(bad_cache) == len(rows[0][0])
    assert batcher.batched_passes == 1 and batcher.batched_rows == len(rows) and batcher.lone_passes == 1
    for got, want, cache, lone_cache in zip(out, lone, caches, lone_caches):
        torch.testing.assert_close(got, want, rtol=0, atol=1e-6)
        assert len(cache) == len(lone_cache)
        for a, b in zip(_layers(cache), _layers(lone_cache)):
            torch.testing.assert_close(a, b, rtol=0, atol=1e-12)


def test_a_failing_batched_forward_runs_every_row_alone(model, tokenizer, monkeypatch):
    rows, lone_caches, lone, batcher, caches = _lone_then_batching(model, tokenizer)
    real = model.hf_model.forward

    def refuse_batches(*args, **kwargs):
        if kwargs["input_ids"].shape[0] > 1:
            raise RuntimeError("simulated failure of the batched pass")
        return real(*args, **kwargs)

    monkeypatch.setattr(model.hf_model, "forward", refuse_batches)
    out = _concurrently(lambda i: _one_pass(model, caches[i], rows[i][1], rows[i][2]), len(rows))
    assert batcher.batched_passes == 0 and batcher.lone_passes == len(rows)
    for got, want, cache, lone_cache in zip(out, lone, caches, lone_caches):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
        assert len(cache) == len(lone_cache)


def test_a_lone_request_runs_alone_without_waiting(model, tokenizer):
    ids = tokenizer(PROMPTS[0]).input_ids
    plain = SpeculativeGenerator(model, prefix_cache=False).generate(
        ids, PromptLookupDrafter(), GenerationConfig(max_new_tokens=12)
    )
    recorded = dict(model.cost.snapshot())
    batcher = enable_verify_batching(model, VerifyBatchConfig(window_ms=1000, max_batch=4, active_ms=1))
    start = time.perf_counter()
    again = SpeculativeGenerator(model, prefix_cache=False).generate(
        ids, PromptLookupDrafter(), GenerationConfig(max_new_tokens=12)
    )
    assert again.token_ids == plain.token_ids
    assert (
        batcher.batched_passes == 0 and batcher.lone_passes == again.stats.target_forward_passes - 1
    )  # the prefill is not a verify pass
    assert time.perf_counter() - start < 1.0  # no window of 1 s was waited
    assert model.cost.snapshot().keys() >= recorded.keys()  # lone passes keep recording their cost


def test_a_finished_sequence_stops_counting_as_active(model, tokenizer):
    batcher = enable_verify_batching(model, VerifyBatchConfig(window_ms=1000, max_batch=4))
    ids = tokenizer(PROMPTS[0]).input_ids
    gone = _prefilled(model, ids)
    batcher.note_active(gone)
    del gone  # its request ended: the cache is freed, so nobody is waited for
    cache = _prefilled(model, ids)
    start = time.perf_counter()
    model.forward(cache, [1, 2])
    assert time.perf_counter() - start < 0.9 and batcher.lone_passes == 1 and len(batcher._seen) == 1


def test_prefills_and_sliding_window_caches_are_never_batched(model):
    from transformers import MistralConfig

    batcher = enable_verify_batching(model)
    assert not batcher.accepts(KVCache(model.hf_model.config))  # empty: a prefill's cache
    sliding = KVCache(
        MistralConfig(
            num_hidden_layers=1, hidden_size=16, num_attention_heads=2, num_key_value_heads=1, sliding_window=4
        )
    )
    assert not sliding.supports_snapshots and not batcher.accepts(sliding)
    assert not batcher.accepts(object())


@pytest.mark.parametrize(
    "field,value", [("window_ms", -1), ("window_ms", 5000), ("max_batch", 1), ("max_batch", 65), ("active_ms", 0)]
)
def test_config_is_validated(field, value):
    with pytest.raises(ValueError, match=field):
        VerifyBatchConfig(**{field: value})


def test_only_transformers_models_take_a_batcher():
    class Other:
        backend = "llama-cpp"
        name = "gguf"

    with pytest.raises(ValueError, match="transformers"):
        enable_verify_batching(Other())


def test_the_fast_path_takes_no_batcher(model):
    from specdraft.backends.fast_path import FastPathModel

    with pytest.raises(ValueError, match="fast path"):
        enable_verify_batching(FastPathModel(model))

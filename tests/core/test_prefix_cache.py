"""The prefix cache (``specdraft.prefix_cache``): the store itself (longest prefix, LRU, bounds), and
generation through it on tiny random transformers models: output == uncached output (greedy, seeded
sampling, drafters), a request that fails or stops half-way leaves the cache usable, concurrent
requests, the memory bound, switching it off."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
from oracle import OracleDrafter
from tiny_models import make_tiny_model

from specdraft import GenerationConfig, SpeculationConfig, SpeculativeGenerator
from specdraft.drafters import PromptLookupDrafter
from specdraft.prefix_cache import (
    DEFAULT_MIN_TOKENS,
    PrefixCache,
    PrefixCacheConfig,
    configure_prefix_cache,
    prefix_cache_for,
)

N_NEW = 24
FIXED = SpeculationConfig(initial_draft_len=4, adaptive=False)


def ids(seed: int, n: int, vocab: int = 300) -> list[int]:
    return np.random.default_rng(seed).integers(5, vocab, n).tolist()


SYSTEM = ids(1, 40)  # a shared opening (a system prompt, an instruction)
PROMPTS = [SYSTEM + ids(10 + i, 12 + 3 * i) for i in range(4)]


# --- the store --------------------------------------------------------------------------------------
def test_lookup_finds_the_longest_shared_prefix_within_the_limit():
    cache = PrefixCache(PrefixCacheConfig(min_tokens=4))
    cache.insert(list(range(10)), "short", 10)
    cache.insert([0, 1, 2, 3, 4, 5, 99, 98], "other", 8)
    hit = cache.lookup(list(range(20)))
    assert (hit.entry.state, hit.length) == ("short", 10)
    assert cache.lookup([0, 1, 2, 3, 4, 5, 99, 98, 7]).entry.state == "other"
    assert cache.lookup(list(range(20)), limit=6).length == 6  # a prefix of an entry serves too
    assert cache.lookup([0, 1, 2, 7, 7, 7]) is None  # 3 shared tokens < min_tokens
    assert cache.lookup([5, 6, 7, 8, 9]) is None
    assert cache.stats()["hits"] == 3 and cache.stats()["lookups"] == 5


def test_least_recently_used_entries_are_evicted_first_within_the_bytes_bound():
    cache = PrefixCache(PrefixCacheConfig(max_bytes=300, min_tokens=2))
    for i in range(3):
        assert cache.insert([i] * 10, f"e{i}", 100)
    assert cache.nbytes == 300 and len(cache) == 3
    cache.lookup([0] * 10)  # e0 is now the most recently used
    cache.insert([3] * 10, "e3", 100)
    assert cache.nbytes == 300
    assert cache.lookup([1] * 10) is None  # e1 was the least recently used
    assert cache.lookup([0] * 10).entry.state == "e0"
    assert not cache.insert([4] * 10, "too big", 301)  # larger than the bound alone: never stored
    assert cache.stats()["evictions"] == 1 and cache.nbytes <= 300


def test_the_tokens_bound_and_entries_covered_by_a_longer_one():
    cache = PrefixCache(PrefixCacheConfig(max_tokens=25, min_tokens=2))
    cache.insert(list(range(10)), "a", 1)
    cache.insert(list(range(15)), "a longer", 1)  # "a" is its prefix: dropped
    assert len(cache) == 1 and cache.tokens == 15
    assert not cache.wants(list(range(12))) and cache.wants(list(range(16)))
    assert not cache.insert(list(range(12)), "held already", 1)
    cache.insert([7] * 12, "b", 1)  # 27 tokens > 25: the oldest goes
    assert cache.tokens == 12 and cache.lookup(list(range(15))) is None
    assert not cache.insert([8] * 30, "more tokens than the bound", 1)


def test_configuration_validates_and_the_registry_gives_one_cache_per_model(tiny_model):
    with pytest.raises(ValueError):
        PrefixCacheConfig(min_tokens=0)
    with pytest.raises(ValueError):
        PrefixCacheConfig(max_bytes=-1)
    assert PrefixCacheConfig().min_tokens == DEFAULT_MIN_TOKENS
    cache = configure_prefix_cache(tiny_model, PrefixCacheConfig(max_bytes=1234))
    assert prefix_cache_for(tiny_model) is cache
    assert configure_prefix_cache(tiny_model, PrefixCacheConfig(enabled=False)) is None
    assert prefix_cache_for(tiny_model) is None
    configure_prefix_cache(tiny_model)


# --- generation through the cache ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def model32(tokenizer):
    """A tiny float32 model (the default dtype), with a cache of its own for this module."""
    model = make_tiny_model(tokenizer, seed=11, dtype=torch.float32, layers=3)
    configure_prefix_cache(model)
    return model


@pytest.fixture
def fresh(model32):
    """model32 with an empty cache (default config)."""
    configure_prefix_cache(model32)
    return model32


def uncached(model, prompt, drafter=None, **config):
    return SpeculativeGenerator(model, FIXED, prefix_cache=False).generate(
        prompt, drafter, GenerationConfig(max_new_tokens=N_NEW, **config)
    )


def cached(model, prompt, drafter=None, **config):
    return SpeculativeGenerator(model, FIXED).generate(
        prompt, drafter, GenerationConfig(max_new_tokens=N_NEW, **config)
    )


def test_greedy_output_equals_uncached_across_requests_sharing_a_prefix(fresh):
    first = cached(fresh, PROMPTS[0])
    assert first.stats.cached_prompt_tokens == 0 and first.stats.to_dict()["cached_prompt_tokens"] == 0
    for prompt in PROMPTS[1:]:
        result = cached(fresh, prompt)
        assert result.token_ids == uncached(fresh, prompt).token_ids
        assert result.stats.cached_prompt_tokens >= len(SYSTEM)
        assert result.stats.target_forward_passes == uncached(fresh, prompt).stats.target_forward_passes
    again = cached(fresh, PROMPTS[0])  # the whole prompt is cached: only its last token runs
    assert again.stats.cached_prompt_tokens == len(PROMPTS[0]) - 1
    assert again.token_ids == first.token_ids


def test_a_chats_next_turn_reuses_the_previous_prompt_and_answer(fresh):
    turn1 = cached(fresh, PROMPTS[0])
    turn2_prompt = PROMPTS[0] + turn1.token_ids + ids(99, 10)
    turn2 = cached(fresh, turn2_prompt)
    # the answer's last token was pending (never run), so everything before it is reused
    assert turn2.stats.cached_prompt_tokens == len(PROMPTS[0]) + len(turn1.token_ids) - 1
    assert turn2.token_ids == uncached(fresh, turn2_prompt).token_ids
    assert len(prefix_cache_for(fresh)) == 1  # turn 1's entry is a prefix of turn 2's: replaced


@pytest.mark.parametrize("kind", ["prompt-lookup", "tree", "partly"])
def test_drafters_stay_lossless_from_a_cached_prefix(fresh, kind):
    cached(fresh, PROMPTS[0])
    for prompt in PROMPTS[1:]:
        plain = uncached(fresh, prompt)
        drafter = (
            PromptLookupDrafter()
            if kind == "prompt-lookup"
            else OracleDrafter(prompt + plain.token_ids, fresh.vocab_size, kind)
        )
        result = cached(fresh, prompt, drafter)
        assert result.stats.cached_prompt_tokens >= len(SYSTEM)
        assert result.token_ids == plain.token_ids


def test_seeded_sampling_equals_uncached(fresh):
    cached(fresh, PROMPTS[0])
    for seed in range(3):
        config = dict(temperature=1.0, top_p=0.9, seed=seed)
        result = cached(fresh, PROMPTS[1], **config)
        assert result.stats.cached_prompt_tokens >= len(SYSTEM)
        assert result.token_ids == uncached(fresh, PROMPTS[1], **config).token_ids


def test_restored_logits_match_a_full_prefill(fresh):
    cached(fresh, PROMPTS[0])
    cache = prefix_cache_for(fresh)
    warm, cold = fresh.new_target(), fresh.new_target()
    assert warm.prefill_cached(PROMPTS[1], cache) >= len(SYSTEM)
    cold.prefill(PROMPTS[1])
    torch.testing.assert_close(warm._next_logits, cold._next_logits, rtol=0, atol=1e-4)
    entry_keys = cache.lookup(PROMPTS[1]).entry.state[0][0]
    assert (
        warm.session.cache.cache.layers[0].keys.untyped_storage().data_ptr() != entry_keys.untyped_storage().data_ptr()
    )
    warm.close(), cold.close()


def test_a_request_failing_half_way_leaves_the_cache_usable(fresh, monkeypatch):
    cached(fresh, PROMPTS[0])
    cache = prefix_cache_for(fresh)
    before = cache.stats()
    layer = fresh.hf_model.model.layers[1]  # layer 0 has appended its keys when layer 1 fails
    calls = {"n": 0}
    original = layer.forward

    def failing(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:  # the prefill, one verification, then the failure mid-pass
            raise RuntimeError("injected failure")
        return original(*args, **kwargs)

    monkeypatch.setattr(layer, "forward", failing)
    with pytest.raises(RuntimeError, match="injected"):
        cached(fresh, PROMPTS[1])
    monkeypatch.undo()
    after = cache.stats()
    assert (after["entries"], after["bytes"], after["inserts"]) == (
        before["entries"],
        before["bytes"],
        before["inserts"],
    )
    for prompt in PROMPTS[1:]:
        assert cached(fresh, prompt).token_ids == uncached(fresh, prompt).token_ids


def test_a_stopped_stream_stores_what_it_committed(fresh):
    stream = SpeculativeGenerator(fresh, FIXED).stream(PROMPTS[0], None, GenerationConfig(max_new_tokens=N_NEW))
    for i, _ in enumerate(stream):
        if i == 5:
            break
    partial = stream.stop()
    assert len(prefix_cache_for(fresh)) == 1
    follow_up = PROMPTS[0] + partial.token_ids + ids(5, 8)
    result = cached(fresh, follow_up)
    assert result.stats.cached_prompt_tokens == len(PROMPTS[0]) + len(partial.token_ids) - 1
    assert result.token_ids == uncached(fresh, follow_up).token_ids


def test_concurrent_requests_through_one_cache(fresh):
    prompts = [SYSTEM + ids(200 + i, 10 + i) for i in range(8)]
    want = {i: uncached(fresh, p).token_ids for i, p in enumerate(prompts)}
    got: dict[int, list[int]] = {}
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for _ in range(2):
                got[i] = cached(fresh, prompts[i], PromptLookupDrafter() if i % 2 else None).token_ids
                assert got[i] == want[i]
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(prompts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and got == want
    assert prefix_cache_for(fresh).stats()["hits"] > 0


def test_the_memory_bound_holds_with_real_entries(model32):
    layers = model32.hf_model.model.layers
    per_token = sum(layer.self_attn.k_proj.out_features * 2 * 4 for layer in layers)  # float32 keys+values
    bound = per_token * 150
    cache = configure_prefix_cache(model32, PrefixCacheConfig(max_bytes=bound))
    for i in range(6):
        cached(model32, ids(300 + i, 60))  # unrelated prompts: 60 + 23 tokens each
        assert cache.nbytes <= bound
    assert cache.stats()["evictions"] >= 4 and len(cache) == 1
    assert cache.nbytes == cache.tokens * per_token


def test_switched_off_per_model_or_per_generator(model32):
    configure_prefix_cache(model32)
    SpeculativeGenerator(model32, prefix_cache=False).generate(PROMPTS[0], None, GenerationConfig(max_new_tokens=4))
    assert len(prefix_cache_for(model32)) == 0  # neither used nor filled
    configure_prefix_cache(model32, PrefixCacheConfig(enabled=False))
    for _ in range(2):
        result = cached(model32, PROMPTS[0])
        assert result.stats.cached_prompt_tokens == 0
    configure_prefix_cache(model32)


def test_store_false_only_reads_the_cache(fresh):
    cached(fresh, PROMPTS[0])
    cache = prefix_cache_for(fresh)
    before = cache.stats()
    target = fresh.new_target()
    assert target.prefill_cached(PROMPTS[1], cache, store=False) >= len(SYSTEM)
    target.close()
    assert cache.stats()["inserts"] == before["inserts"] and len(cache) == before["entries"]


def test_no_prefix_cache_flag_switches_every_model_off(model32, tiny_model):
    import argparse

    from specdraft.apps.cli.model_args import add_model_args, model_pool
    from specdraft.prefix_cache import set_default_prefix_cache

    parser = argparse.ArgumentParser()
    add_model_args(parser, "smollm2-135m")
    assert parser.parse_args([]).no_prefix_cache is False
    try:
        args = parser.parse_args(["--no-prefix-cache"])
        pool = model_pool(args)  # the flag reaches every model of the pool (loaded by it or added to it)
        pool.add("a", model32)
        pool.add("b", tiny_model)
        assert args.no_prefix_cache is True
        assert prefix_cache_for(model32) is None and prefix_cache_for(tiny_model) is None
        assert cached(model32, PROMPTS[0]).stats.cached_prompt_tokens == 0
    finally:
        set_default_prefix_cache(PrefixCacheConfig())
    assert prefix_cache_for(model32) is not None


def test_the_no_prefix_cache_flag_reaches_the_models_the_pool_loads_and_parsing_alone_changes_nothing(
    tiny_checkpoint, model32
):
    import argparse

    from specdraft.apps.cli.model_args import add_model_args, model_pool

    parser = argparse.ArgumentParser()
    add_model_args(parser, "smollm2-135m")
    args = parser.parse_args(["--no-prefix-cache", "--device", "cpu"])
    assert prefix_cache_for(model32) is not None  # parsing rebinds nothing
    path, _ = tiny_checkpoint
    loaded = model_pool(args).get(str(path))
    assert prefix_cache_for(loaded) is None and cached(loaded, PROMPTS[0]).stats.cached_prompt_tokens == 0
    assert prefix_cache_for(model_pool(parser.parse_args(["--device", "cpu"])).get(str(path))) is not None

"""The fast path on the CPU (eager: the code a GPU captures as CUDA graphs): padding, rollback,
capacity growth, the cache pool, the prefix cache, configuration. Losslessness against the plain
transformers target is the conformance suite's (``tests/core/test_target_conformance.py``, "fast-path")."""

from __future__ import annotations

import pytest
import torch
from tiny_models import make_tiny_model

from specdraft import ROOT, Draft, GenerationConfig, SpeculativeGenerator, TokenChooser
from specdraft.backends.fast_path import FastPathConfig, FastPathModel, StaticKV, supports_static_cache
from specdraft.prefix_cache import PrefixCache, PrefixCacheConfig


@pytest.fixture(scope="module")
def plain(tokenizer):
    return make_tiny_model(tokenizer, seed=0)


def verified(model, context, draft, pending_step=True):
    """The verification of ``draft`` after ``context`` (with one committed step first when
    ``pending_step``, so the pass carries the pending token)."""
    target = model.new_target(TokenChooser())
    target.prefill(context[:-1] if pending_step else context)
    if pending_step:
        target.verify(Draft.empty())
        target.commit([], context[-1])
    verification = target.verify(draft)
    target.close()
    return verification


@pytest.mark.parametrize("draft", [Draft.chain([20, 21, 22]), Draft((20, 21, 22, 23, 24), (ROOT, ROOT, 0, 1, 3))])
def test_padding_to_the_bucket_changes_no_kept_row(plain, draft):
    """The same pass padded to a bucket of 8 and run at its exact width (no bucket holds it) gives the
    same rows, and both match the plain target."""
    context = [5, 6, 7, 8, 9]
    padded = verified(FastPathModel(plain, FastPathConfig(buckets=(8,))), context, draft)
    exact = verified(FastPathModel(plain, FastPathConfig(buckets=(1,))), context, draft)
    reference = verified(plain, context, draft)
    assert padded.logits.shape == exact.logits.shape == (1 + len(draft), plain.vocab_size)
    for got in (padded, exact):
        assert [got.choice(r) for r in range(len(got))] == [reference.choice(r) for r in range(len(reference))]
        assert (got.logits - reference.logits).abs().max().item() <= 1e-12


def test_padding_leaves_the_kept_cache_slots_as_an_exact_pass_writes_them(plain):
    model = FastPathModel(plain)
    results = []
    for width in (None, 16):
        kv = StaticKV(plain.hf_model, 64, use_graphs=False)
        kv.run([1, 2, 3, 4], [0, 1, 2, 3], None, None, all_logits=False)
        kv.run([9, 10, 11], [4, 5, 6], None, width)
        assert kv.valid == 7
        results.append([layer.keys[:, :, :7].clone() for layer in kv.layers])
    assert all(torch.allclose(a, b, rtol=0, atol=1e-12) for a, b in zip(*results))
    assert model.config.bucket(3) == 4 and model.config.bucket(129) is None


def test_rollback_moves_the_valid_length_without_copying(plain):
    session = FastPathModel(plain).new_session()
    session.feed([1, 2, 3, 4, 5], all_logits=False)
    keys = session.kv.layers[0].keys
    before = keys[:, :, :5].clone()
    pointer = keys.data_ptr()
    session.feed([6, 7, 8])
    session.truncate(6)
    assert len(session) == 6 and session.kv.layers[0].keys.data_ptr() == pointer
    assert torch.equal(session.kv.layers[0].keys[:, :, :5], before)
    session.feed([20, 21, 22], parents=[ROOT, ROOT, 1])
    session.keep(6, [1, 2])  # the path 21 -> 22: gathered into place
    assert len(session) == 8


def test_a_sequence_that_outgrows_its_cache_moves_to_a_larger_one_with_the_same_output(plain):
    small = FastPathModel(plain, FastPathConfig(min_capacity=8, headroom=0))
    ids = plain.encode("The quick brown fox")
    config = GenerationConfig(max_new_tokens=40, ignore_eos=True)
    want = SpeculativeGenerator(plain).generate(ids, None, config).token_ids
    target = small.new_target(TokenChooser())
    target.prefill(ids)
    first = target.session.kv.capacity
    target.close()
    assert SpeculativeGenerator(small).generate(ids, None, config).token_ids == want
    assert first == 8 and max(kv.capacity for kv in small._free) >= len(ids) + 40


def test_closed_targets_return_their_cache_and_runners_to_the_pool(plain):
    model = FastPathModel(plain, FastPathConfig(pool_size=1))
    target = model.new_target(TokenChooser())
    target.prefill([1, 2, 3])
    target.verify(Draft.chain([4, 5]))
    kv = target.session.kv
    assert set(kv.runners) == {2}  # right after the prefill the pass holds the 2 draft tokens only
    target.close()
    assert model.pooled == 1
    again = model.new_target(TokenChooser())
    again.prefill([7, 8])
    assert again.session.kv is kv and len(again.session) == 2
    again.close()


def test_the_prefix_cache_restores_into_a_static_cache_with_the_same_output(plain):
    model = FastPathModel(plain)
    cache = PrefixCache(PrefixCacheConfig(min_tokens=2))
    ids = plain.encode("The quick brown fox jumps over the lazy dog.")
    config = GenerationConfig(max_new_tokens=12, ignore_eos=True)
    want = SpeculativeGenerator(plain).generate(ids, None, config).token_ids
    outputs = []
    for _ in range(2):
        target = model.new_target(TokenChooser())
        restored = target.prefill_cached(ids, cache)
        tokens = []
        for _ in range(12):
            choice = target.verify(Draft.empty()).choice(0)
            target.commit([], choice)
            tokens.append(choice)
        target.close()
        outputs.append((restored, tokens))
    assert outputs[0] == (0, want) and outputs[1] == (len(ids) - 1, want)


def test_configuration_is_checked():
    with pytest.raises(ValueError):
        FastPathConfig(buckets=(4, 2))
    with pytest.raises(ValueError):
        FastPathConfig(buckets=())
    with pytest.raises(ValueError):
        FastPathConfig(min_capacity=0)


def test_sliding_window_architectures_are_refused():
    from transformers import MistralConfig

    config = MistralConfig(
        vocab_size=32,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        sliding_window=4,
    )
    assert not supports_static_cache(config)

"""The transformers cache object and the target's commit, against a cache built directly (the
backend-independent checks are in test_target_conformance.py)."""

import pytest
import torch
from oracle import started_target

from specdraft import ROOT, Draft


def layer_keys(session):
    return [layer.keys.clone() for layer in session.cache.cache.layers]


def test_truncate_and_keep(tiny_model):
    session = tiny_model.new_session()
    session.feed([5, 6, 7, 8, 9, 10])
    session.truncate(4)
    assert len(session) == 4
    full = tiny_model.new_session()
    full.feed([5, 6, 7, 8, 9, 10])
    full.keep(2, [1, 3])  # keep positions 0, 1, 3, 5
    assert len(full) == 4
    reference = tiny_model.new_session()
    reference.feed([5, 6, 7, 8, 9, 10])
    ref = [layer.keys[:, :, [0, 1, 3, 5]] for layer in reference.cache.cache.layers]
    for got, want in zip(layer_keys(full), ref):
        assert torch.equal(got, want)


@pytest.mark.parametrize("pending_step", [False, True])
def test_tree_commit_equals_cache_of_the_accepted_tokens(tiny_model, pending_step):
    draft = Draft((20, 21, 22, 23, 24), (ROOT, ROOT, 0, 1, 3))
    target, context = started_target(tiny_model, [11, 12, 13, 14], pending_step)
    logits = target.verify(draft).logits
    assert logits.shape == (1 + len(draft), tiny_model.vocab_size)
    target.commit([1, 3, 4], next_token=30)
    assert target.context_length == len(context) + 3 + 1

    direct = tiny_model.new_session()
    direct.feed(context + [21, 23, 24])
    for got, want in zip(layer_keys(target.session), layer_keys(direct)):
        assert torch.allclose(got, want, atol=1e-10)
    # and the next verification sees the same state as a target that prefilled everything
    fresh = tiny_model.new_target()
    fresh.prefill(context + [21, 23, 24, 30])
    assert torch.allclose(target.verify(Draft.chain([7])).logits, fresh.verify(Draft.chain([7])).logits, atol=1e-9)

"""The prefix cache on real smollm2-135m, transformers (float32) and llama.cpp: a chat's second turn
and a second request sharing an instruction give the same tokens as without the cache, greedy and
seeded sampling, and on llama.cpp the restored prefix gives bit-identical logits."""

from __future__ import annotations

import numpy as np
import pytest

from specdraft import GenerationConfig, SpeculativeGenerator
from specdraft.drafters import PromptLookupDrafter
from specdraft.prefix_cache import configure_prefix_cache

pytestmark = pytest.mark.slow

N_NEW = 12
SYSTEM = "You are a careful assistant. Answer briefly, in plain words, and quote the user's words when it helps."
TURN1 = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": "What does a prefix cache do in a language model server?"},
]


@pytest.fixture(scope="module", params=["transformers", "llama-cpp"])
def model(request, real_model):
    loaded = real_model("smollm2-135m", request.param)
    configure_prefix_cache(loaded)
    return loaded


def run(model, prompt, cache: bool, drafter=None, **config):
    return SpeculativeGenerator(model, prefix_cache=cache).generate(
        prompt, drafter, GenerationConfig(max_new_tokens=N_NEW, **config)
    )


def test_a_chats_second_turn_equals_uncached(model):
    configure_prefix_cache(model)
    turn1 = model.encode_chat(TURN1)
    answer = run(model, turn1, True)
    turn2 = model.encode_chat(
        [*TURN1, {"role": "assistant", "content": answer.text}, {"role": "user", "content": "Say it in one sentence."}]
    )
    for drafter, config in ((None, {}), (PromptLookupDrafter(), {}), (None, {"temperature": 0.8, "seed": 5})):
        warm = run(model, turn2, True, drafter, **config)
        assert warm.stats.cached_prompt_tokens >= len(turn1)
        assert warm.token_ids == run(model, turn2, False, drafter, **config).token_ids


def test_requests_sharing_a_system_prompt_equal_uncached(model):
    configure_prefix_cache(model)
    prompts = [
        model.encode_chat([{"role": "system", "content": SYSTEM}, {"role": "user", "content": q}])
        for q in ("Name a fruit.", "Name a color.")
    ]
    run(model, prompts[0], True)
    warm = run(model, prompts[1], True)
    assert warm.stats.cached_prompt_tokens > len(model.tokenizer.encode(SYSTEM))
    assert warm.token_ids == run(model, prompts[1], False).token_ids


def test_restored_prefix_gives_the_same_logits(model):
    cache = configure_prefix_cache(model)
    ids = model.encode_chat(TURN1)
    run(model, ids + model.encode("Some answer text that the cache keeps."), True)
    warm, cold = model.new_target(), model.new_target()
    assert warm.prefill_cached(ids, cache) == len(ids) - 1
    cold.prefill(ids)
    a, b = (
        np.asarray(t._next_logits.cpu() if hasattr(t._next_logits, "cpu") else t._next_logits) for t in (warm, cold)
    )
    if model.backend == "llama-cpp":
        assert np.array_equal(a, b)  # the same cells, the same per-row arithmetic: bit for bit
    else:
        assert np.abs(a - b).max() < 1e-3
    warm.close(), cold.close()

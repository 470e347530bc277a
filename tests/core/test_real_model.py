"""Greedy losslessness on the real smollm2-135m (fp32): speculative == model.generate."""

import pytest
import torch
from oracle import OracleDrafter

from specdraft import GenerationConfig, SpeculationConfig, SpeculativeGenerator
from specdraft.drafters import PromptLookupDrafter

pytestmark = pytest.mark.slow

PROMPTS = [
    "Correct the grammar: She go to school every days and she like it.",
    "Summarize: The committee met on Tuesday to discuss the budget. The budget was approved after a long debate.",
    "Write a Python function that returns the sum of a list.",
]
N_NEW = 48


@pytest.fixture(scope="module")
def smollm2(real_model):
    return real_model("smollm2-135m")


@pytest.fixture(scope="module")
def cases(smollm2):
    out = []
    for prompt in PROMPTS:
        ids = smollm2.encode_chat([{"role": "user", "content": prompt}])
        ref = smollm2.hf_model.generate(
            torch.tensor([ids]), max_new_tokens=N_NEW, do_sample=False, eos_token_id=sorted(smollm2.eos_token_ids)
        )[0, len(ids) :].tolist()
        out.append((ids, ref))
    return out


@pytest.mark.parametrize("mode", ["right", "wrong", "partly", "tree"])
def test_oracle_drafters_are_lossless_on_smollm2(smollm2, cases, mode):
    for ids, reference in cases:
        drafter = OracleDrafter(ids + reference, smollm2.vocab_size, mode)
        # at most 8 drafted tokens a step, so even the 11-token answer takes several steps (the policy's
        # learned pass costs, which depend on the machine's load, once drafted it whole in one step)
        config = SpeculationConfig(fallback=False, max_draft_len=8, initial_draft_len=8)
        result = SpeculativeGenerator(smollm2, config).generate(ids, drafter, GenerationConfig(max_new_tokens=N_NEW))
        assert result.token_ids == reference
        assert result.stats.verify_steps >= 2


def test_prompt_lookup_is_lossless_on_smollm2(smollm2, cases):
    for ids, reference in cases:
        result = SpeculativeGenerator(smollm2).generate(
            ids, PromptLookupDrafter(), GenerationConfig(max_new_tokens=N_NEW)
        )
        assert result.token_ids == reference

"""The engine: greedy output == transformers' own greedy generate, for every kind of drafter;
sampling reproduces the target's distribution; stop rules; streaming."""

from collections import Counter

import pytest
import torch
from oracle import OracleDrafter
from scipy.stats import chisquare

from specdraft import GenerationConfig, SpeculationConfig, SpeculativeGenerator
from specdraft.cost import PassCostProfile
from specdraft.drafters import DraftModelConfig, DraftModelDrafter, PromptLookupDrafter
from specdraft.sampling import PositionalRandom, warp

PROMPTS = ["The quick brown fox", "def add(a, b):\n", "Grammar correction returns mostly", "ünïcödé 🙂"]
N_NEW = 40


def hf_greedy(model, prompt_ids, n=N_NEW):
    out = model.hf_model.generate(torch.tensor([prompt_ids]), max_new_tokens=n, min_new_tokens=n, do_sample=False)
    return out[0, len(prompt_ids) :].tolist()


@pytest.fixture(scope="module")
def references(tiny_model, tokenizer):
    return {p: hf_greedy(tiny_model, tokenizer(p).input_ids) for p in PROMPTS}


@pytest.mark.parametrize("mode", ["right", "wrong", "partly", "tree"])
@pytest.mark.parametrize("prompt", PROMPTS)
def test_greedy_output_equals_transformers_generate(tiny_model, tokenizer, references, prompt, mode):
    prompt_ids = tokenizer(prompt).input_ids
    reference = references[prompt]
    drafter = OracleDrafter(prompt_ids + reference, tiny_model.vocab_size, mode)
    speculation = SpeculationConfig(initial_draft_len=5, adaptive=False)  # several rounds
    result = SpeculativeGenerator(tiny_model, speculation).generate(
        prompt_ids, drafter, GenerationConfig(max_new_tokens=N_NEW)
    )
    assert result.token_ids == reference
    assert result.stats.verify_steps > 3  # several verify rounds
    if mode == "right":
        assert result.stats.mean_accepted_tokens > 2
    if mode == "wrong":
        assert result.stats.accepted_tokens == 0 and result.stats.drafted_tokens > 0
    if mode in ("partly", "tree"):
        assert 0 < result.stats.accepted_tokens < result.stats.drafted_tokens


@pytest.mark.parametrize("drafter_kind", ["none", "prompt-lookup", "draft-model-chain", "draft-model-tree"])
def test_general_drafters_are_lossless(tiny_model, tiny_draft_model, tokenizer, references, drafter_kind):
    for prompt in PROMPTS:
        prompt_ids = tokenizer(prompt).input_ids
        drafter = {
            "none": lambda: None,
            "prompt-lookup": PromptLookupDrafter,
            "draft-model-chain": lambda: DraftModelDrafter(tiny_draft_model, tiny_model.vocab_size),
            "draft-model-tree": lambda: DraftModelDrafter(
                tiny_draft_model, tiny_model.vocab_size, config=DraftModelConfig(tree_width=3)
            ),
        }[drafter_kind]()
        result = SpeculativeGenerator(tiny_model).generate(prompt_ids, drafter, GenerationConfig(max_new_tokens=N_NEW))
        assert result.token_ids == references[prompt]
        assert result.text == tokenizer.decode(references[prompt])


def test_plain_decoding_is_one_pass_per_token(tiny_model, tokenizer, references):
    prompt_ids = tokenizer(PROMPTS[0]).input_ids
    result = SpeculativeGenerator(tiny_model).generate(prompt_ids, None, GenerationConfig(max_new_tokens=N_NEW))
    stats = result.stats
    assert (
        stats.verify_steps == N_NEW and stats.drafted_tokens == 0 and stats.target_forward_passes == N_NEW
    )  # as generate()
    assert result.finish_reason == "length"


def test_eos_stops_like_transformers(tiny_model, tokenizer, references):
    prompt_ids = tokenizer(PROMPTS[0]).input_ids
    reference = references[PROMPTS[0]]
    eos = reference[7]
    tiny_model.hf_model.generation_config.eos_token_id = eos
    try:
        expected = tiny_model.hf_model.generate(torch.tensor([prompt_ids]), max_new_tokens=N_NEW, do_sample=False)
        drafter = OracleDrafter(prompt_ids + reference, tiny_model.vocab_size, "right")
        result = SpeculativeGenerator(tiny_model).generate(prompt_ids, drafter, GenerationConfig(max_new_tokens=N_NEW))
    finally:
        tiny_model.hf_model.generation_config.eos_token_id = None
    assert result.token_ids == expected[0, len(prompt_ids) :].tolist()
    assert result.token_ids[-1] == eos and result.finish_reason == "stop"


def test_max_new_tokens_is_exact_even_when_a_draft_runs_past_it(tiny_model, tokenizer, references):
    prompt_ids = tokenizer(PROMPTS[1]).input_ids
    reference = references[PROMPTS[1]]
    drafter = OracleDrafter(prompt_ids + reference, tiny_model.vocab_size, "right")
    result = SpeculativeGenerator(tiny_model, SpeculationConfig(initial_draft_len=16)).generate(
        prompt_ids, drafter, GenerationConfig(max_new_tokens=11)
    )
    assert result.token_ids == reference[:11]


def test_stop_string_and_streaming(tiny_model, tokenizer, references):
    prompt_ids = tokenizer(PROMPTS[0]).input_ids
    reference = references[PROMPTS[0]]
    full_text = tokenizer.decode(reference)
    stop = full_text[len(full_text) // 2 : len(full_text) // 2 + 3]
    drafter = OracleDrafter(prompt_ids + reference, tiny_model.vocab_size, "partly")
    stream = SpeculativeGenerator(tiny_model).stream(
        prompt_ids, drafter, GenerationConfig(max_new_tokens=N_NEW, stop=(stop,))
    )
    pieces = list(stream)
    result = stream.result
    assert result.text == full_text[: full_text.index(stop)]
    assert "".join(p.text for p in pieces) == result.text
    assert {p.source for p in pieces} <= {"draft", "target"} and any(p.source == "draft" for p in pieces)
    assert result.finish_reason == "stop"
    assert result.token_ids == reference[: len(result.token_ids)]


class FixedCost(PassCostProfile):
    """A cost profile that ignores measurements: a pass over n tokens costs 1 + n."""

    def __init__(self) -> None:
        super().__init__()
        for n in (1, 2, 4, 8, 16, 32, 64):
            super().record(n, 1.0 + n)

    def record(self, n_tokens: int, seconds: float) -> None:
        pass


def test_fallback_to_plain_decoding_when_drafts_never_pay(tiny_model, tokenizer, references, monkeypatch):
    prompt_ids = tokenizer(PROMPTS[0]).input_ids
    reference = references[PROMPTS[0]]
    monkeypatch.setattr(tiny_model, "cost", FixedCost())  # wide passes cost far more than narrow ones
    drafter = OracleDrafter(prompt_ids + reference, tiny_model.vocab_size, "wrong")
    result = SpeculativeGenerator(tiny_model).generate(prompt_ids, drafter, GenerationConfig(max_new_tokens=N_NEW))
    assert result.token_ids == reference
    assert result.stats.fallback_steps > N_NEW // 2
    assert result.stats.drafted_tokens < N_NEW


# --- sampling ---------------------------------------------------------------------------------


def exact_two_token_distribution(model, prompt_ids, params):
    """P(x1, x2) of the target under ``params``, by brute force over x1's support."""
    session = model.new_session()
    first = warp(session.feed(prompt_ids)[-1], params)
    joint = {}
    for x1 in torch.nonzero(first).flatten().tolist():
        s = model.new_session()
        second = warp(s.feed(prompt_ids + [x1])[-1], params)
        for x2 in torch.nonzero(second).flatten().tolist():
            joint[(x1, x2)] = float(first[x1] * second[x2])
    return joint


@pytest.mark.parametrize("drafter_kind", ["draft-model", "prompt-lookup", "tree"])
def test_sampling_reproduces_the_target_distribution(tiny_model, tiny_draft_model, tokenizer, drafter_kind):
    prompt_ids = tokenizer("The dog sleeps. The dog").input_ids
    config = GenerationConfig(max_new_tokens=2, temperature=1.5, top_k=4, ignore_eos=True)
    joint = exact_two_token_distribution(tiny_model, prompt_ids, config.sampling)
    generator = SpeculativeGenerator(tiny_model, SpeculationConfig(initial_draft_len=2, fallback=False))
    n = 1500
    counts = Counter()
    for seed in range(n):
        cfg = GenerationConfig(**{**config.__dict__, "seed": seed})
        if drafter_kind == "draft-model":
            drafter = DraftModelDrafter(
                tiny_draft_model, tiny_model.vocab_size, cfg.sampling, PositionalRandom(10_000 + seed)
            )
        elif drafter_kind == "prompt-lookup":
            drafter = PromptLookupDrafter()
        else:
            support = sorted({x1 for x1, _ in joint})
            drafter = OracleDrafter(prompt_ids + support[:1] + [support[1]], tiny_model.vocab_size, "tree")
            drafter.propose = _ignoring_reference(drafter, prompt_ids, support)
        counts[tuple(generator.generate(prompt_ids, drafter, cfg).token_ids)] += 1
    cells = sorted(joint)
    assert set(counts) <= set(cells)
    observed = [counts.get(c, 0) for c in cells]
    expected = [joint[c] * n for c in cells]
    # pool rare cells so the chi-square approximation holds
    big = [i for i, e in enumerate(expected) if e >= 5]
    small = [i for i, e in enumerate(expected) if e < 5]
    obs = [observed[i] for i in big] + ([sum(observed[i] for i in small)] if small else [])
    exp = [expected[i] for i in big] + ([sum(expected[i] for i in small)] if small else [])
    scale = sum(obs) / sum(exp)
    assert chisquare(obs, [e * scale for e in exp]).pvalue > 1e-3


def _ignoring_reference(drafter, prompt_ids, support):
    """A fixed deterministic tree over the likely first tokens, whatever the context."""
    from specdraft import ROOT, Draft

    def propose(context_ids, budget):
        if len(context_ids) > len(prompt_ids):
            return Draft.chain([support[0]])
        return Draft((support[0], support[1], support[2]), (ROOT, ROOT, 1))

    return propose


def test_same_seed_same_output(tiny_model, tiny_draft_model, tokenizer):
    prompt_ids = tokenizer(PROMPTS[0]).input_ids
    config = GenerationConfig(max_new_tokens=20, temperature=1.0, top_p=0.9, seed=42)
    outputs = []
    for _ in range(2):
        drafter = DraftModelDrafter(tiny_draft_model, tiny_model.vocab_size, config.sampling, PositionalRandom(1))
        outputs.append(SpeculativeGenerator(tiny_model).generate(prompt_ids, drafter, config).token_ids)
    assert outputs[0] == outputs[1]


def test_seeded_sampling_with_a_deterministic_drafter_equals_plain_sampling(tiny_model, tokenizer):
    prompt_ids = tokenizer("The dog sleeps. The dog sleeps. The dog").input_ids
    for seed in range(5):
        config = GenerationConfig(max_new_tokens=24, temperature=0.7, seed=seed)
        plain = SpeculativeGenerator(tiny_model).generate(prompt_ids, None, config)
        drafted = SpeculativeGenerator(tiny_model).generate(prompt_ids, PromptLookupDrafter(), config)
        assert drafted.token_ids == plain.token_ids

"""The target's own log-probabilities (``GenerationConfig.logprobs``): the same tokens with and without
them, the values of a plain forward pass over the whole sequence, whatever the drafter."""

import numpy as np
import pytest
import torch
from oracle import OracleDrafter, greedy_continuations

from specdraft import (
    GenerationConfig,
    LogprobsUnavailableError,
    SpeculationConfig,
    SpeculativeGenerator,
    TokenChooser,
    TokenLogprob,
    Verification,
)
from specdraft.drafters import PromptLookupDrafter
from specdraft.logprobs import predicting_rows, token_logprobs

PROMPTS = ["The quick brown fox", "Grammar correction returns mostly"]
N_NEW = 24
K = 3
TOLERANCE = 1e-5  # the backend hands logits over in float32
SPECULATION = SpeculationConfig(initial_draft_len=5, adaptive=False)  # several rounds, long drafts


@pytest.fixture(scope="module")
def references(tiny_model, tokenizer):
    return greedy_continuations(tiny_model, tokenizer, PROMPTS, N_NEW)


def forward_logprobs(model, prompt_ids, generated):
    """log_softmax of the raw logits of one plain forward pass over prompt + generated: row i
    predicts generated[i]."""
    ids = torch.tensor([prompt_ids + generated])
    with torch.no_grad():
        logits = model.hf_model(ids).logits[0, len(prompt_ids) - 1 : -1].double()
    return torch.log_softmax(logits, dim=-1)


def generate(model, prompt_ids, drafter=None, **config):
    return SpeculativeGenerator(model, SPECULATION).generate(
        prompt_ids, drafter, GenerationConfig(max_new_tokens=N_NEW, **config)
    )


def test_predicting_rows_follow_the_acceptance_convention():
    assert predicting_rows(()) == [0]  # nothing kept: the bonus token comes from row 0
    assert predicting_rows((0, 1, 2)) == [0, 1, 2, 3]  # a chain
    assert predicting_rows((1, 4)) == [0, 2, 5]  # a tree: node 1, then its child 4


def test_token_logprobs_of_hand_built_logits():
    logits = np.array([[0.0, 0.0, 0.0, 0.0], [3.0, 1.0, 1.0, -1.0]], dtype=np.float32)
    first, second = token_logprobs(logits, rows=[0, 1], tokens=[2, 1], k=2)
    assert first.token == 2 and first.logprob == pytest.approx(np.log(0.25))
    assert [p for _, p in first.top] == pytest.approx([np.log(0.25)] * 2)
    total = np.log(np.exp(3.0) + 2 * np.exp(1.0) + np.exp(-1.0))
    assert second.logprob == pytest.approx(1.0 - total)
    assert second.top[0] == (0, pytest.approx(3.0 - total))
    assert token_logprobs(logits, [1], [0], k=0) == [TokenLogprob(0, pytest.approx(3.0 - total))]
    assert len(token_logprobs(logits, [1], [0], k=10)[0].top) == 4  # k is capped at the vocabulary


@pytest.mark.parametrize("mode", ["right", "wrong", "partly", "tree"])
def test_greedy_tokens_are_identical_and_logprobs_are_the_targets(tiny_model, references, mode):
    for prompt_ids, reference in references.values():
        plain = generate(tiny_model, prompt_ids, OracleDrafter(prompt_ids + reference, tiny_model.vocab_size, mode))
        drafter = OracleDrafter(prompt_ids + reference, tiny_model.vocab_size, mode)
        result = generate(tiny_model, prompt_ids, drafter, logprobs=K)
        assert result.token_ids == plain.token_ids == reference
        assert plain.logprobs is None
        expected = forward_logprobs(tiny_model, prompt_ids, reference)
        assert [entry.token for entry in result.logprobs] == reference
        for i, entry in enumerate(result.logprobs):
            assert entry.logprob == pytest.approx(float(expected[i, reference[i]]), abs=TOLERANCE)
            values, ids = expected[i].topk(K)
            assert [t for t, _ in entry.top] == ids.tolist()
            assert [v for _, v in entry.top] == pytest.approx(values.tolist(), abs=TOLERANCE)
            assert entry.top[0][0] == reference[i]  # greedy: the emitted token is the likeliest


@pytest.mark.parametrize("drafter", [None, PromptLookupDrafter], ids=["plain", "prompt-lookup"])
def test_seeded_sampling_gives_the_same_tokens_and_raw_logprobs(tiny_model, references, drafter):
    """Sampled at temperature 0.7 with top-k: the logprobs are still the raw logits' (no warp)."""
    for prompt_ids, _ in references.values():
        settings = {"temperature": 0.7, "top_k": 5, "seed": 11}
        without = generate(tiny_model, prompt_ids, drafter and drafter(), **settings)
        result = generate(tiny_model, prompt_ids, drafter and drafter(), logprobs=0, **settings)
        assert result.token_ids == without.token_ids
        expected = forward_logprobs(tiny_model, prompt_ids, result.token_ids)
        observed = [entry.logprob for entry in result.logprobs]
        assert observed == pytest.approx([float(expected[i, t]) for i, t in enumerate(result.token_ids)], abs=TOLERANCE)
        assert all(entry.top == () for entry in result.logprobs)


def test_streamed_logprobs_arrive_before_the_text_that_holds_them(tiny_model, references):
    prompt_ids, reference = next(iter(references.values()))
    stream = SpeculativeGenerator(tiny_model, SPECULATION).stream(
        prompt_ids,
        OracleDrafter(prompt_ids + reference, tiny_model.vocab_size, "partly"),
        GenerationConfig(max_new_tokens=N_NEW, logprobs=1),
    )
    seen = 0
    for _ in stream:
        assert len(stream.logprobs) > seen  # every piece comes with at least one new token
        seen = len(stream.logprobs)
    assert [entry.token for entry in stream.logprobs] == stream.result.token_ids == reference
    assert stream.result.logprobs == stream.logprobs


def test_eos_and_stop_strings_keep_one_entry_per_generated_token(tiny_model, tokenizer, references):
    prompt_ids, reference = next(iter(references.values()))
    stop = tokenizer.decode(reference)[10:14]
    result = generate(tiny_model, prompt_ids, None, logprobs=0, stop=(stop,))
    assert result.finish_reason == "stop"
    assert [entry.token for entry in result.logprobs] == result.token_ids


class ChoicesOnlyModel:
    """The tiny model behind targets that return only their chosen tokens (as a remote verify server)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.closed = 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def new_target(self, chooser=TokenChooser()):
        model = self

        class Target:
            returns_logits = False

            def __init__(self) -> None:
                self.inner = model.inner.new_target(chooser)

            def __getattr__(self, name):
                return getattr(self.inner, name)

            def verify(self, draft):
                verification = self.inner.verify(draft)
                return Verification.from_choices([verification.choice(r) for r in range(len(verification))])

            def close(self):
                model.closed += 1
                self.inner.close()

        return Target()


def test_a_target_without_logits_refuses_logprobs_before_generating(tiny_model, references):
    prompt_ids, reference = next(iter(references.values()))
    model = ChoicesOnlyModel(tiny_model)
    assert generate(model, prompt_ids).token_ids == reference  # without logprobs it serves
    closed = model.closed
    with pytest.raises(LogprobsUnavailableError, match="logits"):
        SpeculativeGenerator(model).stream(prompt_ids, None, GenerationConfig(logprobs=0))
    assert model.closed == closed + 1  # the target it made is released


def test_negative_logprobs_are_rejected():
    with pytest.raises(ValueError, match="logprobs must be None or >= 0"):
        GenerationConfig(logprobs=-1)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["transformers", "llama-cpp"])
def test_real_model_logprobs_change_no_token(backend, real_model):
    """smollm2-135m on both backends (llama.cpp hands numpy logits over): prompt lookup with and
    without logprobs gives the same tokens; under greedy decoding each token is its row's likeliest."""
    model = real_model("smollm2-135m", backend)
    prompt_ids = model.encode_chat(
        [{"role": "user", "content": "Correct the grammar: She go to school every days and she like it."}]
    )
    plain = generate(model, prompt_ids, PromptLookupDrafter())
    result = generate(model, prompt_ids, PromptLookupDrafter(), logprobs=2)
    assert result.token_ids == plain.token_ids
    assert [entry.token for entry in result.logprobs] == result.token_ids
    for entry in result.logprobs:
        assert entry.top[0][0] == entry.token and entry.logprob == pytest.approx(entry.top[0][1])
        assert entry.top[0][1] >= entry.top[1][1] and entry.logprob <= 0.0

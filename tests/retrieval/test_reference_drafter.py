"""ReferenceDrafter (LLMA): longest match, trees of distinct continuations, tie-breaks, budget,
real tokenizers, and lossless generation (== transformers' greedy generate) with a tiny model."""

from __future__ import annotations

import pytest
from oracle import Recording, greedy_continuations

from specdraft import ROOT, Draft, GenerationConfig, SpeculationConfig, SpeculativeGenerator
from specdraft.retrieval.reference_drafter import Branch, ReferenceDraftConfig, ReferenceDrafter

PROMPT = [900, 901, 902]  # stands for the chat-wrapped question and passages


def started(references, **config) -> ReferenceDrafter:
    """A drafter that has seen the prompt (its first call), so the output starts after PROMPT."""
    drafter = ReferenceDrafter(references, ReferenceDraftConfig(**config))
    drafter.propose(PROMPT, 16)
    return drafter


def step(drafter: ReferenceDrafter, output: list[int], budget: int = 16) -> Draft:
    return drafter.propose(PROMPT + output, budget)


def test_longest_ngram_wins():
    drafter = started([[1, 2, 3, 4, 5, 6], [7, 3, 4, 9, 10]])
    assert step(drafter, [2, 3, 4]) == Draft.chain([5, 6])  # the 3-gram; [3, 4] -> 9 is not drafted
    assert step(drafter, [8, 3, 4]) == Draft((5, 9, 6, 10), (ROOT, ROOT, 0, 1))  # only the 2-gram matches


def test_no_match_gives_an_empty_draft():
    drafter = ReferenceDrafter([[1, 2, 3, 4], [900, 901, 902, 5]])
    assert drafter.propose(PROMPT, 16) == Draft.empty()  # no output yet; the prompt is not matched
    assert step(drafter, [42, 43]) == Draft.empty()
    assert step(drafter, [2]) == Draft.empty()  # shorter than min_ngram = 2
    assert step(drafter, [2, 3], budget=0) == Draft.empty()
    assert started([]).propose(PROMPT + [1, 2], 8) == Draft.empty()


def test_min_ngram_one_matches_single_tokens():
    drafter = started([[1, 2, 3, 4]], min_ngram=1)
    assert step(drafter, [42, 2]) == Draft.chain([3, 4])


def test_a_match_at_a_reference_end_has_no_continuation():
    drafter = started([[5, 1, 2], [2, 8, 9]], min_ngram=1)
    assert step(drafter, [1, 2]) == Draft.chain([8, 9])  # [1, 2] ends reference 0: use the 1-gram [2]


def test_matches_never_span_two_references():
    drafter = started([[1, 2], [3, 4, 5]])
    assert step(drafter, [2, 3]) == Draft.empty()


def test_output_start_is_learned_at_the_first_call_and_the_prompt_is_not_matched():
    references = [[901, 902, 50, 51, 52]]
    drafter = started(references)
    assert step(drafter, [50]) == Draft.empty()  # [902, 50] would reach into the prompt
    drafter = started(references, match_prompt_tail=True)
    assert step(drafter, [50]) == Draft.chain([51, 52])


def test_distinct_continuations_form_a_tree_and_identical_ones_merge():
    references = [[1, 2, 3, 4, 5], [1, 2, 3, 6, 7], [0, 2, 3, 4, 5]]
    drafter = started(references)
    found = drafter.lookup([9, 2, 3], 16)
    assert found.ngram == 2
    assert found.branches == (Branch((4, 5), 2, 0, 3), Branch((6, 7), 1, 1, 3))
    # priorities (count * 0.8^(depth-1)): 4: 2, 5: 1.6, 6: 1, 7: 0.8
    assert step(drafter, [9, 2, 3]) == Draft((4, 5, 6, 7), (ROOT, 0, ROOT, 2))


def test_shared_prefixes_are_merged():
    drafter = started([[2, 3, 4, 5, 6], [2, 3, 4, 5, 7]])
    assert step(drafter, [2, 3]) == Draft((4, 5, 6, 7), (ROOT, 0, 1, 1))


def test_branch_order_first_token_count_then_reference_then_position():
    references = [
        [2, 3, 9, 4],  # reference 0: (9, 4); first token 9 has 1 match, so this branch is last
        [2, 3, 8, 1],  # reference 1: (8, 1)
        [2, 3, 7, 5, 2, 3, 8, 2],  # reference 2: (7, 5) at 2, (8, 2) at 6
        [6, 2, 3, 7, 5],  # reference 3: (7, 5) again: merged, count 2
    ]
    drafter = started(references)
    found = drafter.lookup([2, 3], 2)
    assert found.branches == (
        Branch((8, 1), 1, 1, 2),  # first tokens 8 and 7 both have 2 matches: earlier reference first
        Branch((7, 5), 2, 2, 2),
        Branch((8, 2), 1, 2, 6),  # same reference as (7, 5): earlier position first
        Branch((9, 4), 1, 0, 2),
    )
    drafter = started(references, max_branches=2)
    assert [b.tokens for b in drafter.lookup([2, 3], 2).branches] == [(8, 1), (7, 5)]


def test_the_better_supported_branch_runs_deeper():
    references = [[2, 3, 10, 11, 12, 13, 14, 15, 16]] * 3 + [[2, 3, 20, 21, 22]]
    drafter = started(references)
    # counts 3 and 1: 3 * 0.8^4 = 1.23 > 1 > 3 * 0.8^5 = 0.98 > 0.8
    assert step(drafter, [2, 3], budget=6) == Draft((10, 11, 12, 13, 14, 20), (ROOT, 0, 1, 2, 3, ROOT))
    assert step(drafter, [2, 3], budget=7).tokens == (10, 11, 12, 13, 14, 20, 15)


def test_equal_counts_share_the_budget_depth_by_depth():
    drafter = started([[2, 3, 10, 11, 12], [2, 3, 20, 21, 22]])
    assert step(drafter, [2, 3], budget=5) == Draft((10, 20, 11, 21, 12), (ROOT, ROOT, 0, 1, 2))


def test_depth_decay_one_ranks_by_count_alone():
    references = [[2, 3, 10, 11, 12, 13, 14, 15, 16]] * 3 + [[2, 3, 20, 21, 22]]
    drafter = started(references, depth_decay=1.0)
    assert step(drafter, [2, 3], budget=8).tokens == (10, 11, 12, 13, 14, 15, 16, 20)


def test_max_branches_one_is_llma_chain():
    drafter = started([[2, 3, 10, 11, 12], [2, 3, 20, 21, 22]], max_branches=1)
    assert step(drafter, [2, 3], budget=5) == Draft.chain([10, 11, 12])


def test_budget_caps_the_nodes():
    references = [[2, 3, t, t + 1, t + 2, t + 3] for t in range(10, 60, 10)]
    drafter = started(references)
    for budget in range(1, 12):
        draft = step(drafter, [2, 3], budget)
        assert len(draft) == budget
        assert len(draft.children(ROOT)) == min(4, budget)  # max_branches = 4 of the 5 references
    assert step(drafter, [2, 3], budget=30).tokens.count(50) == 0  # the fifth branch is never drafted


def test_invalid_config_is_refused():
    for bad in ({"min_ngram": 0}, {"min_ngram": 5, "max_ngram": 4}, {"max_branches": 0}, {"depth_decay": 0.0}):
        with pytest.raises(ValueError):
            ReferenceDraftConfig(**bad)


@pytest.mark.parametrize("tokenizer_name", ["tiny-bpe", pytest.param("smollm2-135m", marks=pytest.mark.slow)])
def test_unicode_text_with_a_real_tokenizer(tokenizer, tokenizer_name):
    if tokenizer_name != "tiny-bpe":
        from transformers import AutoTokenizer

        from specdraft.models import resolve_checkpoint

        tokenizer = AutoTokenizer.from_pretrained(resolve_checkpoint(tokenizer_name))
    texts = [
        "Retrieval augmented generation quotes the documents it retrieved: ünïcödé, 日本語, emoji 🙂, and more.",
        "The quick brown fox jumps over the lazy dog. 日本語 is written without spaces.",
    ]
    references = [tokenizer(t, add_special_tokens=False).input_ids for t in texts]
    ids = references[0]
    cut = next(i for i in range(len(ids)) if "ünïcödé" in tokenizer.decode(ids[:i]))  # mid-text, after the umlauts
    drafter = ReferenceDrafter(references)
    drafter.propose(PROMPT, 8)
    draft = drafter.propose(PROMPT + ids[:cut], 500)
    assert draft == Draft.chain(ids[cut:])
    assert tokenizer.decode(ids[:cut] + list(draft.tokens)) == texts[0]


# --- lossless generation with a tiny random model ----------------------------------------------

PROMPTS = ["The quick brown fox", "Retrieval augmented generation quotes", "ünïcödé 🙂"]
N_NEW = 40


@pytest.fixture(scope="module")
def greedy(tiny_model, tokenizer):
    """prompt -> (prompt ids, the tiny model's own greedy continuation per transformers)."""
    return greedy_continuations(tiny_model, tokenizer, PROMPTS, N_NEW)


def references_for(continuation: list[int], vocab_size: int, tokenizer, tree: bool) -> list[list[int]]:
    """Retrieved documents: an unrelated one and the continuation itself; for trees also, first, a
    variant with every fifth token changed, so the true branch is not always the first."""
    unrelated = tokenizer("Grammar correction returns mostly the text it was given.").input_ids
    if not tree:
        return [unrelated, continuation]
    variant = [(t + 1) % vocab_size if i % 5 == 4 else t for i, t in enumerate(continuation)]
    return [unrelated, variant, continuation]


@pytest.mark.parametrize("shape", ["chain", "tree"])
def test_greedy_output_equals_transformers_generate(tiny_model, tokenizer, greedy, shape):
    trees = 0
    for prompt in PROMPTS:
        prompt_ids, expected = greedy[prompt]
        references = references_for(expected, tiny_model.vocab_size, tokenizer, tree=shape == "tree")
        config = ReferenceDraftConfig(max_branches=1 if shape == "chain" else 4)
        drafter = Recording(ReferenceDrafter(references, config))
        generator = SpeculativeGenerator(tiny_model, SpeculationConfig(initial_draft_len=6, adaptive=False))
        result = generator.generate(prompt_ids, drafter, GenerationConfig(max_new_tokens=N_NEW))
        assert result.token_ids == expected
        assert result.stats.accepted_tokens > N_NEW // 3  # the drafts were really used
        trees += sum(not d.is_chain for d in drafter.drafts)
    assert (trees > 0) == (shape == "tree")


def test_seeded_sampling_equals_plain_sampling(tiny_model, tokenizer, greedy):
    prompt_ids, expected = greedy[PROMPTS[0]]
    references = references_for(expected, tiny_model.vocab_size, tokenizer, tree=True)
    generator = SpeculativeGenerator(tiny_model, SpeculationConfig(initial_draft_len=6, adaptive=False))
    for seed in range(2):
        config = GenerationConfig(max_new_tokens=24, temperature=0.7, seed=seed)
        plain = generator.generate(prompt_ids, None, config)
        drafted = generator.generate(prompt_ids, ReferenceDrafter(references + [plain.token_ids]), config)
        assert drafted.token_ids == plain.token_ids
        assert drafted.stats.accepted_tokens > 0

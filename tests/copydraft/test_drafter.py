"""CopyDrafter: drafting the source, re-alignment after edits, uniqueness, source end, stop tokens."""

import dataclasses

from specdraft import Draft
from specdraft.copydraft.drafter import NOT_ALIGNED, CopyDraftConfig, CopyDrafter, unique_anchor

PROMPT = [900, 901, 902]  # stands for the chat-wrapped instruction
NO_TREE = CopyDraftConfig(divergence_tree=False)


def step(drafter, output, budget=100):
    """Propose after ``output`` (tokens generated so far) and return the draft's tokens."""
    return list(drafter.propose(PROMPT + output, budget).tokens)


def test_drafts_the_whole_source_in_one_go():
    drafter = CopyDrafter([1, 2, 3, 4, 5])
    assert step(drafter, []) == [1, 2, 3, 4, 5]


def test_budget_caps_the_draft_and_sync_continues():
    drafter = CopyDrafter([1, 2, 3, 4, 5, 6])
    assert step(drafter, [], budget=2) == [1, 2]
    drafter.observe(2)  # both accepted, bonus = 3 (in sync)
    assert step(drafter, [1, 2, 3], budget=2) == [4, 5]


def test_substitution_realigns_on_the_next_unique_ngram():
    source = [10, 11, 12, 13, 14, 15]
    drafter = CopyDrafter(source, config=NO_TREE)
    assert step(drafter, []) == source
    drafter.observe(2)  # target kept 10, 11 and said 99 instead of 12
    assert step(drafter, [10, 11, 99]) == []  # "99", "11 99", "10 11 99" are not in the source
    drafter.observe(0)  # plain step: the target said 13
    assert step(drafter, [10, 11, 99, 13]) == [14, 15]  # "13" occurs once: re-anchored after it


def test_insertion_realigns_immediately_after_the_inserted_token():
    source = [10, 11, 12, 13]
    drafter = CopyDrafter(source, config=NO_TREE)
    step(drafter, [])
    drafter.observe(1)  # kept 10, then inserted 50
    assert step(drafter, [10, 50]) == []
    drafter.observe(0)  # the target goes on with 11
    assert step(drafter, [10, 50, 11]) == [12, 13]


def test_deletion_realigns_after_the_skipped_token():
    source = [10, 11, 12, 13, 14]
    drafter = CopyDrafter(source)
    step(drafter, [])
    drafter.observe(1)  # kept 10, skipped 11: the bonus is 12
    assert step(drafter, [10, 12]) == [13, 14]  # "12" is unique: anchor after it


def test_repeated_words_are_not_anchors():
    # "the" (7) occurs twice: after an edit, a lone "the" must not re-anchor; "cat the" is unique.
    source = [7, 20, 21, 7, 22]
    assert unique_anchor(source, [99, 7], 3) == NOT_ALIGNED
    assert unique_anchor(source, [21, 7], 3) == 4
    assert unique_anchor(source, [5, 21, 7], 3) == 4  # the 3-gram is absent, the 2-gram unique


def test_longest_unique_ngram_wins():
    source = [1, 2, 3, 9, 3]
    assert unique_anchor(source, [2, 3], 3) == 3  # "2 3" is unique even though "3" is not


def test_never_drafts_past_the_source_end():
    drafter = CopyDrafter([1, 2, 3])
    assert step(drafter, []) == [1, 2, 3]
    drafter.observe(3)  # all kept; bonus = end of text, or whatever the target adds
    assert step(drafter, [1, 2, 3, 4]) == []


def test_never_drafts_a_stop_token_or_beyond():
    drafter = CopyDrafter([1, 2, 0, 3, 4], stop_token_ids={0})
    assert step(drafter, []) == [1, 2]


def test_chat_lead_in_is_skipped_until_the_source_appears():
    source = [30, 31, 32, 33]
    drafter = CopyDrafter(source, config=NO_TREE)
    step(drafter, [])
    drafter.observe(0)  # the target starts with a lead-in token 70
    assert step(drafter, [70]) == []
    drafter.observe(0)
    assert step(drafter, [70, 71]) == []
    drafter.observe(0)
    assert step(drafter, [70, 71, 30]) == [31, 32, 33]


def test_fallback_to_prompt_lookup_while_unaligned():
    drafter = CopyDrafter([30, 31, 32], config=CopyDraftConfig(divergence_tree=False, fallback_to_prompt_lookup=True))
    step(drafter, [])
    drafter.observe(0)
    # not aligned: prompt lookup over the whole context finds "901" earlier, followed by 902
    assert step(drafter, [5, 901]) == [902, 5, 901]


def test_unicode_source_round_trips_through_a_real_tokenizer(tokenizer):
    text = "Ünïcödé café 日本語 🙂 naïve."
    ids = tokenizer(text).input_ids
    drafter = CopyDrafter(ids)
    draft = drafter.propose([1, 2], 100)
    assert isinstance(draft, Draft) and tokenizer.decode(list(draft.tokens)) == text


def test_divergence_tree_covers_substitution_insertion_and_double_substitution():
    source = [10, 11, 12, 13, 14, 15]
    drafter = CopyDrafter(source)
    step(drafter, [])
    drafter.observe(2)  # kept 10, 11; refused 12 and said 99 (not in the source)
    draft = drafter.propose(PROMPT + [10, 11, 99], 9)
    branches = [
        [draft.tokens[n] for n in draft.path_to(leaf)] for leaf in range(len(draft)) if not draft.children(leaf)
    ]
    assert branches == [[13, 14, 15], [12, 13, 14], [14, 15]]  # from d+1, d, d+2 with d = 2


def test_divergence_tree_branch_taken_keeps_the_drafter_in_sync():
    source = [10, 11, 12, 13, 14, 15, 16]
    drafter = CopyDrafter(source)
    step(drafter, [])
    drafter.observe(1)  # kept 10; refused 11, said 98
    drafter.propose(PROMPT + [10, 98], 9)  # branches from 12, 11, 13
    drafter.observe(2)  # the target kept the substitution branch's 12, 13 and said 14
    assert step(drafter, [10, 98, 12, 13, 14]) == [15, 16]


def test_no_second_divergence_tree_without_a_new_refusal():
    source = [10, 11, 12, 13]
    drafter = CopyDrafter(source)
    step(drafter, [])
    drafter.observe(1)  # refused 11
    drafter.propose(PROMPT + [10, 97], 9)
    drafter.observe(0)  # no branch was right: the target said 96
    assert step(drafter, [10, 97, 96]) == []  # one tree per refusal: wait for a unique n-gram


def test_copydraft_stays_in_sync_across_a_plain_first_step(tiny_model, tokenizer):
    """The copy drafter learns where the output starts at its first call: after a plain first step
    it drafts on from the source's second token, so an answer that is the source comes in one pass."""
    from specdraft import GenerationConfig, SpeculativeGenerator
    from specdraft.copydraft import CopyDrafter
    from specdraft.copydraft.editor import COPY_SPECULATION

    prompt_ids = tokenizer("Fix: the cat sat on the mat").input_ids
    config = GenerationConfig(max_new_tokens=12, ignore_eos=True)
    plain = SpeculativeGenerator(tiny_model).generate(prompt_ids, None, config)
    assert COPY_SPECULATION.plain_first_step
    speculation = dataclasses.replace(
        COPY_SPECULATION, adaptive=False
    )  # drafts as long as allowed, whatever passes cost
    result = SpeculativeGenerator(tiny_model, speculation, prefix_cache=False).generate(
        prompt_ids, CopyDrafter(plain.token_ids), config
    )
    assert result.token_ids == plain.token_ids
    assert result.stats.target_forward_passes == 2  # the prefill, then one pass over the other 11 tokens

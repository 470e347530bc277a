"""Prompt lookup's tie-breaks: the longest n-gram, then the first (or latest) occurrence."""

import pytest

from specdraft.drafters import PromptLookupConfig, PromptLookupDrafter


def draft(context, budget=4, **config):
    return list(PromptLookupDrafter(PromptLookupConfig(**config)).propose(context, budget).tokens)


def test_first_occurrence_wins_by_default():
    #          0  1  2  3  4  5  6  7  8  9
    context = [1, 2, 7, 8, 1, 2, 9, 9, 5, 1, 2]
    assert draft(context) == [7, 8, 1, 2]


def test_latest_occurrence_on_request():
    context = [1, 2, 7, 8, 1, 2, 9, 9, 5, 1, 2]
    assert draft(context, occurrence="latest") == [9, 9, 5, 1]


def test_the_longest_ngram_wins():
    # the bigram (3, 4) occurs once, followed by 6; the unigram 4 first occurs followed by 5
    context = [4, 5, 3, 4, 6, 3, 4]
    assert draft(context, budget=1) == [6]
    assert draft(context, budget=1, max_ngram=1) == [5]


def test_an_occurrence_without_continuation_is_skipped_and_budget_caps():
    assert draft([5, 6, 5], budget=1) == [6]
    assert draft([1, 2, 3, 4, 5, 6, 1], budget=3) == [2, 3, 4]
    assert draft([1, 2, 3]) == []


def test_bad_config_is_refused():
    with pytest.raises(ValueError, match="occurrence"):
        PromptLookupConfig(occurrence="middle")


def test_a_strong_match_drafts_the_whole_budget_a_weak_one_at_most_weak_draft_len():
    # the 3-gram (1, 2, 3) recurs: a strong match, the whole budget
    strong = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 2, 3]
    assert draft(strong, budget=6) == [4, 5, 6, 7, 8, 9]
    # only the bigram (2, 3) recurs (after 5, not 1): weak, capped
    weak = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 5, 2, 3]
    assert draft(weak, budget=6) == [4, 5, 6, 7]
    assert draft(weak, budget=6, weak_draft_len=2) == [4, 5]
    assert draft(weak, budget=6, strong_ngram=2) == [4, 5, 6, 7, 8, 9]
    # a lone matching token is weak too
    assert draft([7, 1, 2, 3, 4, 5, 6, 8, 7], budget=6) == [1, 2, 3, 4]


def test_the_longest_match_up_to_4_grams_wins_over_the_first_bigram():
    # (8, 9) first occurs followed by 1; the 4-gram (6, 7, 8, 9) later, followed by 2
    context = [8, 9, 1, 5, 6, 7, 8, 9, 2, 3, 4, 6, 7, 8, 9]
    assert draft(context, budget=3) == [2, 3, 4]
    assert draft(context, budget=3, max_ngram=2) == [1, 5, 6]


def test_bad_strength_settings_are_refused():
    with pytest.raises(ValueError, match="strong_ngram"):
        PromptLookupConfig(strong_ngram=0)
    with pytest.raises(ValueError, match="weak_draft_len"):
        PromptLookupConfig(weak_draft_len=0)

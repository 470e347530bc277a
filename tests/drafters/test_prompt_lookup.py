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

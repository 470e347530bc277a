"""Grammar-correction error injectors, pinned on crafted sentences, and inject_errors over them."""

import random
from difflib import SequenceMatcher

import pytest

from specdraft.apps.bench.datasets.grammar_data import (
    COMMON_MISSPELLINGS,
    INJECTORS,
    Injection,
    agreement,
    apply_injections,
    article,
    inject_errors,
    preposition,
    punctuation,
    spelling,
    tense,
    typos,
)

SEEDS = range(20)


def _outputs(injector, text: str) -> set[str]:
    """Every text ``injector`` makes of ``text`` over SEEDS (``None`` when it did not apply)."""
    tokens = text.split()
    outputs = set()
    for seed in SEEDS:
        injection = injector(tokens, random.Random(seed), frozenset())
        outputs.add(None if injection is None else " ".join(apply_injections(tokens, [injection])))
    return outputs


@pytest.mark.parametrize(
    ("injector", "text", "expected"),
    [
        # agreement
        (agreement, "The dogs are barking loudly.", {"The dogs is barking loudly."}),
        (agreement, "Is it raining in town today?", {"Are it raining in town today?"}),
        (agreement, "She says hello to everyone.", {"She say hello to everyone."}),
        (agreement, "They say it works.", {"They says it works."}),
        (agreement, "Cats sleep all day.", {None}),
        # article
        (article, "He saw the old house.", {"He saw old house."}),
        (article, "The house was empty.", {"House was empty."}),
        (article, "She ate an apple.", {"She ate apple.", "She ate a apple."}),
        (article, "He works for people every day.", {"He works for the people every day."}),
        (article, "He voted for them today.", {None}),
        (article, "Dogs bark loudly.", {None}),
        # tense
        (tense, "Yesterday she went home early.", {"Yesterday she go home early."}),
        (tense, "They walked to school.", {"They walk to school."}),
        (tense, "He decided to stay.", {"He decide to stay."}),
        (tense, "She tried hard.", {"She try hard."}),
        (tense, "She goes home.", {None}),
        # spelling: a table word wins over typos
        (spelling, "I will receive it soon.", {"I will recieve it soon."}),
        (spelling, "Their cat is big.", {"Thier cat is big."}),
        (spelling, "It is a big dog.", {None}),
        (spelling, "London, Paris, Berlin.", {None}),
        # preposition
        (preposition, "He sat in the garden.", {"He sat on the garden.", "He sat at the garden."}),
        (preposition, "She went to the park.", {"She went for the park.", "She went at the park."}),
        (preposition, "He flew to Paris.", {"He flew for Paris.", "He flew at Paris."}),
        (preposition, "She wants to leave now.", {None}),
        # punctuation
        (punctuation, "However, the plan failed.", {"However the plan failed."}),
        (punctuation, "The plan failed.", {None}),
        (punctuation, "He said yes,", {None}),
    ],
)
def test_injector_outputs(injector, text, expected):
    assert _outputs(injector, text) == expected


@pytest.mark.parametrize("name", list(INJECTORS))
def test_injector_is_deterministic_for_a_seed(name):
    tokens = "However, the dogs were walked in the park by a man, and they say it was definitely great.".split()
    first = [INJECTORS[name](tokens, random.Random(seed), frozenset()) for seed in SEEDS]
    again = [INJECTORS[name](tokens, random.Random(seed), frozenset()) for seed in SEEDS]
    assert first == again
    assert all(injection is not None for injection in first)


@pytest.mark.parametrize("name", list(INJECTORS))
def test_injector_changes_only_its_span(name):
    tokens = "However, the dogs were walked in the park by a man, and they say it was definitely great.".split()
    for seed in SEEDS:
        injection = INJECTORS[name](tokens, random.Random(seed), frozenset())
        assert injection.error == name
        new = apply_injections(tokens, [injection])
        assert new != tokens
        assert new[: injection.start] == tokens[: injection.start]
        assert len(new) - len(tokens) == len(injection.new) - (injection.end - injection.start)
        assert new[injection.start + len(injection.new) :] == tokens[injection.end :]


def test_injector_skips_taken_tokens():
    tokens = "He sat in the garden.".split()
    assert preposition(tokens, random.Random(0), frozenset({2})) is None
    assert preposition(tokens, random.Random(0), frozenset({1, 3})) is not None


def test_insertion_counts_as_touching_the_next_token():
    tokens = "He works for people every day.".split()
    assert article(tokens, random.Random(0), frozenset({3})) is None  # "the" would go before token 3


def test_typos_of_a_word():
    assert set(typos("house")) == {
        "huose", "hosue", "houes",  # adjacent letters swapped
        "hoouse", "houuse", "housse", "housee",  # a letter doubled
        "huse", "hose", "houe",  # a letter dropped, never the last
    }  # fmt: skip
    assert "house" not in typos("house")
    assert len(typos("letter")) == len(set(typos("letter")))  # "lettter" once, not per "t"


def test_typo_changes_one_lowercase_word_keeping_its_first_letter():
    tokens = "The garden looks lovely, Mary.".split()
    for seed in SEEDS:
        injection = spelling(tokens, random.Random(seed), frozenset())
        assert injection.end == injection.start + 1
        old = tokens[injection.start].strip(".,")
        (new,) = injection.new
        assert old in {"garden", "looks", "lovely"}
        assert new.strip(".,") in typos(old)
        assert new[len(new.rstrip(".,")) :] == tokens[injection.start][len(old) :]  # punctuation kept


def test_common_misspellings_differ_from_their_words():
    assert all(word != wrong for word, wrong in COMMON_MISSPELLINGS.items())


def test_apply_injections_indexes_the_original_tokens():
    tokens = ["a", "b", "c", "d"]
    injections = [Injection(0, 1, ("A",), "x"), Injection(2, 2, ("new",), "x"), Injection(3, 4, (), "x")]
    assert apply_injections(tokens, injections) == ["A", "b", "new", "c"]


LONG = (
    "However, the dogs were walked in the park by a man who said that they have definitely "
    "received an award for the best behaviour in the town."
)


def test_inject_errors_is_deterministic_and_counts():
    for seed in SEEDS:
        source, errors = inject_errors(LONG, 3, random.Random(seed))
        assert (source, errors) == inject_errors(LONG, 3, random.Random(seed))
        assert source != LONG
        assert len(errors) == 3 and set(errors) <= set(INJECTORS)


def test_inject_errors_keeps_errors_a_token_apart():
    tokens = LONG.split()
    for seed in SEEDS:
        source, errors = inject_errors(LONG, 4, random.Random(seed))
        # difflib separates changes by unchanged tokens: one change per error means none touch
        opcodes = SequenceMatcher(a=tokens, b=source.split(), autojunk=False).get_opcodes()
        assert len([op for op in opcodes if op[0] != "equal"]) == len(errors) == 4


def test_inject_errors_stops_when_nothing_applies():
    assert inject_errors("Dogs bark.", 3, random.Random(0)) == ("Dogs bark.", ())


def test_inject_errors_varies_with_the_seed():
    assert len({inject_errors(LONG, 2, random.Random(seed)) for seed in SEEDS}) > 10

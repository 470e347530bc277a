"""Grammar-correction sets: sentence splitting, clean sentences, paragraph windows, and the sets
built from a fake article pool."""

import pytest

from specdraft.apps.bench import datasets
from specdraft.apps.bench.datasets.grammar_data import (
    GRAMMAR_SETS,
    PARAGRAPH_ERRORS,
    PARAGRAPH_SENTENCES,
    PARAGRAPH_WORDS,
    SENTENCE_ERRORS,
    SENTENCE_WORDS,
    is_clean,
    load_grammar_set,
    paragraph_window,
    split_sentences,
)


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

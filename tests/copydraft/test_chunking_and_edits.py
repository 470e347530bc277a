import pytest

from specdraft.copydraft import chunking
from specdraft.copydraft.edits import Edit, apply, diff

DOCUMENT = "  First paragraph. It has two sentences.\n\n\nSecond one,\twith a tab.  \n \nThird.\n"


def test_split_keeps_every_character():
    chunks = chunking.split(DOCUMENT)
    assert "".join(c.lead + c.core + c.trail for c in chunks) == DOCUMENT
    assert [c.core for c in chunks if c.core] == [
        "First paragraph. It has two sentences.",
        "Second one,\twith a tab.",
        "Third.",
    ]


def test_long_paragraphs_are_split_into_sentences():
    text = "One sentence here. Another one follows! A question? The end."
    chunks = chunking.split(text, max_chars=20)
    assert [c.core for c in chunks] == ["One sentence here.", "Another one follows!", "A question?", "The end."]
    assert "".join(c.lead + c.core + c.trail for c in chunks) == text


def test_join_replaces_cores_only():
    chunks = chunking.split(DOCUMENT)
    cores = [c.core.upper() for c in chunks]
    assert chunking.join(chunks, cores) == (
        "  FIRST PARAGRAPH. IT HAS TWO SENTENCES.\n\n\nSECOND ONE,\tWITH A TAB.  \n \nTHIRD.\n"
    )


@pytest.mark.parametrize(
    "original, corrected",
    [
        ("She go to school every days.", "She goes to school every day."),
        ("I has a apple", "I have an apple."),
        ("Their going too the park", "They're going to the park"),
        ("no change here", "no change here"),
        ("delete the the word", "delete the word"),
        ("ünïcödé teh café", "ünïcödé the café"),
        ("line one\nline  two", "Line one.\nLine two."),
        ("", "Inserted."),
    ],
)
def test_edits_round_trip(original, corrected):
    edits = diff(original, corrected)
    assert apply(original, edits) == corrected
    for edit in edits:
        assert original[edit.start : edit.end] == edit.original


def test_edits_are_whole_words():
    edits = diff("She go to school every days.", "She goes to school every day.")
    assert [(e.original, e.replacement) for e in edits] == [("go", "goes"), ("days", "day")]


def test_apply_rejects_edits_that_do_not_fit():
    with pytest.raises(ValueError):
        apply("abc", [Edit(0, 1, "x", "y")])

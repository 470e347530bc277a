"""Citations and answer spans: which passages an answer quotes, and where each drafted run came from."""

from specdraft.retrieval.index import Chunk, Hit
from specdraft.retrieval.provenance import AnswerSpan, answer_spans, cited
from specdraft.text_stream import TextPiece


def hit(chunk_id: str, text: str, score: float = 0.5) -> Hit:
    return Hit(0, Chunk(chunk_id, chunk_id.split("#")[0], text), score)


HITS = [
    hit("a#0", "The Eiffel Tower is 330 metres tall and stands in Paris."),
    hit("b#0", "Paris is the capital of France. The Eiffel Tower is 330 metres tall."),
]


def test_drafted_runs_link_to_the_first_passage_that_holds_them():
    pieces = [
        TextPiece(" It", "target"),
        TextPiece(" is", "draft"),  # merged with the next two drafted pieces into one run
        TextPiece(" 330 metres", "draft"),
        TextPiece(" tall", "draft"),
        TextPiece(" and", "target"),
        TextPiece(" capital of France", "draft"),
        TextPiece(".\n", "target"),
    ]
    spans = answer_spans(pieces, HITS)
    assert spans == [
        AnswerSpan("It", "target"),
        AnswerSpan(" is 330 metres tall", "draft", "a#0", HITS[0].chunk.text.find("is 330 metres tall")),
        AnswerSpan(" and", "target"),
        AnswerSpan(" capital of France", "draft", "b#0", HITS[1].chunk.text.find("capital of France")),
        AnswerSpan(".", "target"),
    ]
    assert "".join(s.text for s in spans) == "".join(p.text for p in pieces).strip()


def test_a_drafted_run_in_no_passage_stays_unlinked():
    spans = answer_spans([TextPiece("Sure, here", "draft"), TextPiece(" it is", "target")], HITS)
    assert spans[0] == AnswerSpan("Sure, here", "draft", None, None)
    assert spans[0].to_dict() == {"text": "Sure, here", "source": "draft", "passage": None, "passage_start": None}


def test_whitespace_only_edges_are_dropped():
    pieces = [
        TextPiece("\n", "draft"),
        TextPiece(" ", "target"),
        TextPiece("Paris", "target"),
        TextPiece("  \n", "draft"),
    ]
    assert answer_spans(pieces, HITS) == [AnswerSpan("Paris", "target")]
    assert answer_spans([TextPiece(" ", "draft")], HITS) == []
    assert answer_spans([], HITS) == []


def test_citations_need_a_run_of_words_in_common():
    answer = "The Eiffel Tower is 330 metres tall."
    assert cited(answer, HITS, 4) == ["a#0", "b#0"]
    assert cited("Paris is the capital of France", HITS, 4) == ["b#0"]
    assert cited("Paris is big", HITS, 4) == []

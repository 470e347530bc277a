"""Where a RAG answer came from: the passages it cites, and the passage each drafted run was copied from.

- ``cited(answer, hits, min_words)``: the retrieved chunks that share a run of at least ``min_words``
  consecutive words with the answer, in retrieval order.
- ``answer_spans(pieces, hits)``: the answer spelled as runs of one source ("draft": tokens the target
  accepted from a drafter; "target": tokens it generated itself). A drafted run is **linked** to the
  first retrieved passage (retrieval order) whose text contains the run's text with its outer
  whitespace stripped; ``passage_start`` is where, in that passage's text. A drafted run found in no
  passage (the datastore drafted it, or a token boundary split a word) stays shaded but unlinked.

Nothing here touches the model: both work on text, so they apply to any drafter's output.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from specdraft.text_stream import Source, TextPiece, merge_pieces

from .retriever import Hit

_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class AnswerSpan:
    """A run of the answer's text from one source; ``passage`` (a chunk id) and ``passage_start``
    (a character offset in that chunk's text) are set for a drafted run found in a passage."""

    text: str
    source: Source
    passage: str | None = None
    passage_start: int | None = None

    def to_dict(self) -> dict:
        return {"text": self.text, "source": self.source, "passage": self.passage, "passage_start": self.passage_start}


def _word_ngrams(text: str, n: int) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def cited(answer: str, hits: Sequence[Hit], min_words: int) -> list[str]:
    """Ids of the hits that share a run of ``min_words`` consecutive words with ``answer``."""
    spans = _word_ngrams(answer, min_words)
    return [h.chunk.id for h in hits if spans & _word_ngrams(h.chunk.text, min_words)]


def answer_spans(pieces: Sequence[TextPiece], hits: Sequence[Hit]) -> list[AnswerSpan]:
    """The answer ``"".join(p.text for p in pieces).strip()`` as runs of one source, drafted runs
    linked to their passage (rules in the module docstring). Joining the spans' texts gives the
    stripped answer exactly."""
    return [_linked(piece, hits) for piece in _strip(merge_pieces(list(pieces)))]


def _linked(piece: TextPiece, hits: Sequence[Hit]) -> AnswerSpan:
    needle = piece.text.strip()
    if piece.source != "draft" or not needle:
        return AnswerSpan(piece.text, piece.source)
    for hit in hits:
        start = hit.chunk.text.find(needle)
        if start >= 0:
            return AnswerSpan(piece.text, piece.source, hit.chunk.id, start)
    return AnswerSpan(piece.text, piece.source)


def _strip(pieces: list[TextPiece]) -> list[TextPiece]:
    """``pieces`` without the whitespace that opens the first ones and closes the last ones."""
    while pieces and not pieces[0].text.lstrip():
        pieces = pieces[1:]
    while pieces and not pieces[-1].text.rstrip():
        pieces = pieces[:-1]
    if not pieces:
        return []
    pieces[0] = TextPiece(pieces[0].text.lstrip(), pieces[0].source)
    pieces[-1] = TextPiece(pieces[-1].text.rstrip(), pieces[-1].source)
    return pieces

"""What an iterative answer reports: one ``RetrievalRecord`` per stride and the ``IterativeAnswer``.

``RetrievalRecord``: the stride (0 = before the first token), the query, the documents put into
the prompt (``doc`` the first, ``docs`` all of them, rows of the collection), and how they were
found: ``source`` "retriever" with ``status`` "exact" (plain retrieval, or speculative retrieval's
first stride and the strides OS^3 chose to retrieve plainly), "cache" / "confirmed" (guessed from the speculative cache,
then confirmed by the batched verification), or "retriever" / "rolled_back" (the cache guessed ``guessed`` wrongly: the
stride was generated again with the retriever's documents). ``seconds``: the retrieval that chose
the documents (the cache lookup for a confirmed guess, the search otherwise; a batched search's
time is shared equally by its queries). The documents are the same as plain iterative RAG's for
every stride, whatever the source.

``IterativeAnswer.stats`` uses the core's names (``specdraft.stats.Stats``: seconds end in ``_s``,
``target_forward_passes``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from specdraft.text_stream import TextPiece

__all__ = ["RetrievalRecord", "IterativeAnswer", "Source", "Status"]

Source = Literal["retriever", "cache"]
Status = Literal["exact", "confirmed", "rolled_back"]


@dataclass(frozen=True)
class RetrievalRecord:
    stride: int
    query: str
    docs: tuple[int, ...]
    source: Source
    status: Status
    seconds: float
    doc_ids: tuple[str, ...] = ()
    start_token: int = 0  # the first answer token generated with these documents
    guessed: tuple[int, ...] = ()  # the cache's wrong guess (status "rolled_back")

    @property
    def doc(self) -> int:
        return self.docs[0]

    def to_dict(self) -> dict:
        return {
            "stride": self.stride,
            "query": self.query,
            "doc": self.doc,
            "docs": list(self.docs),
            "doc_ids": list(self.doc_ids),
            "source": self.source,
            "status": self.status,
            "seconds": round(self.seconds, 6),
            "start_token": self.start_token,
            "guessed": list(self.guessed),
        }


@dataclass
class IterativeAnswer:
    """``text`` (stop strings cut), ``token_ids`` (EOS included when it ended the answer), one
    record per stride, ``finish_reason`` "stop" | "length", ``stats`` (seconds and counts; see
    ``IterativeRAG``), ``pieces`` (the streamed text pieces)."""

    question: str
    text: str
    token_ids: list[int]
    retrievals: list[RetrievalRecord]
    finish_reason: str
    stats: dict
    pieces: list[TextPiece] = field(default_factory=list)

    @property
    def docs(self) -> list[tuple[int, ...]]:
        """The documents of every stride, in order (what "document for document" compares)."""
        return [record.docs for record in self.retrievals]

    def to_dict(self) -> dict:
        return {
            "question": self.question,
            "answer": self.text,
            "token_ids": self.token_ids,
            "finish_reason": self.finish_reason,
            "retrievals": [record.to_dict() for record in self.retrievals],
            "stats": self.stats,
        }

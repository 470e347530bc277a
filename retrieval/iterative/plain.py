"""Plain iterative RAG (the baseline): retrieve at every stride boundary, then generate the stride.

Every retrieval is one ``search`` of one query on the answering thread; the documents are the
top ``docs_in_prompt`` results. This is what speculative retrieval must reproduce exactly.
"""

from __future__ import annotations

from typing import Iterator

from .answering import Answering, Event

__all__ = ["answer_plainly"]


def answer_plainly(state: Answering) -> Iterator[Event]:
    """Yield each stride's record and the answer's text pieces as they are generated."""
    config = state.config
    stride = 0
    while not state.finished:
        start = len(state.decoder.answer)
        query = state.query(start)
        results, seconds = state.search([query], config.docs_in_prompt)
        state.count_search(1, seconds)
        state.stats["retrieval_wait_s"] += seconds
        docs = state.top_docs(results[0])
        end = state.generate_stride(docs)
        record = state.record(stride, query, docs, "retriever", "exact", seconds, start)
        yield from state.confirm(record, len(state.decoder.answer), end)
        stride += 1
    yield from state.tail()

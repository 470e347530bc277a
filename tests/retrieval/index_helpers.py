"""Shared by the DocumentIndex tests: three small documents and an index on `HashEmbedder`."""

from __future__ import annotations

from hash_embedder import HashEmbedder

from specdraft.retrieval.index import DocumentIndex, IndexConfig

DOCS = [
    {
        "id": "cats",
        "text": "Cats sleep most of the day. A cat purrs when it is content.",
        "metadata": {"topic": "pets"},
    },
    {"id": "rust", "text": "Rust programs are compiled. The borrow checker prevents data races."},
    {
        "id": "tea",
        "text": "Green tea is steeped in hot water for two minutes.",
        "metadata": {"topic": "food", "rank": 3},
    },
]


def make_index(**config) -> DocumentIndex:
    return DocumentIndex.create(IndexConfig(**config), HashEmbedder())


def filled_index(**config) -> DocumentIndex:
    index = make_index(**config)
    index.add(DOCS)
    return index


def results(index: DocumentIndex, query: str, k: int = 3) -> list[tuple[str, float]]:
    return [(hit.chunk.id, round(hit.score, 5)) for hit in index.search(query, k)]

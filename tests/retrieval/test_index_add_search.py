"""DocumentIndex add and search: ranking, bad queries, bad documents, failing embedders, config checks.

Embeds with `HashEmbedder` (hashed bag-of-words, no model)."""

from __future__ import annotations

import numpy as np
import pytest
from hash_embedder import HashEmbedder
from index_helpers import filled_index, make_index, results

from specdraft.retrieval.index import IndexConfig, InvalidDocumentError


def test_search_ranks_the_matching_document_first():
    index = filled_index()
    assert index.search("why does my cat purr", k=1)[0].chunk.doc_id == "cats"
    assert index.search("borrow checker data races", k=1)[0].chunk.doc_id == "rust"
    hits = index.search("green tea water", k=3)
    assert hits[0].chunk.doc_id == "tea"
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
    assert hits[0].score == pytest.approx(np.dot(*_unit(index, "green tea water", hits[0].chunk.text)), abs=1e-5)


def _unit(index, *texts):
    return index.embedder.encode(list(texts))


def test_k_larger_than_the_index_and_empty_index():
    index = filled_index()
    assert len(index.search("tea", k=50)) == 3
    assert make_index().search("anything", k=3) == []
    assert index.search_batch(["cat", "rust"], k=1)[1][0].chunk.doc_id == "rust"


@pytest.mark.parametrize("query, k", [("", 3), ("   ", 3), ("tea", 0), ("tea", -1), ("tea", True), ("tea", 2.0)])
def test_bad_queries_are_rejected(query, k):
    with pytest.raises(ValueError):
        filled_index().search(query, k)


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"id": "x"}, r"document 1 \(id 'x'\): missing text"),
        ({"id": "x", "text": "  \n"}, r"document 1 \(id 'x'\): empty text"),
        ({"id": "x", "text": 7}, r"document 1 \(id 'x'\): text must be a string"),
        ({"id": 7, "text": "t"}, r"document 1: id must be a non-empty string, got 7"),
        ({"text": "t"}, r"document 1: id must be a non-empty string, got None"),
        ({"id": "new", "text": "t", "metadata": [1]}, r"document 1 \(id 'new'\): metadata must be an object"),
        ({"id": "new", "text": "t", "metadata": {"f": float("nan")}}, r"document 1 \(id 'new'\): metadata is not JSON"),
        ({"id": "new", "text": "t", "metadata": {"s": {1, 2}}}, r"document 1 \(id 'new'\): metadata is not JSON"),
        ("just text", r"document 1: must be an object with id and text, got str"),
        ({"id": "ok", "text": "t"}, r"document 1 \(id 'ok'\): duplicate id \(also document 0\)"),
        ({"id": "cats", "text": "t"}, r"document 1 \(id 'cats'\): a document with this id is already in the index"),
    ],
)
def test_a_bad_document_names_itself_and_leaves_the_index_unchanged(bad, message):
    index = filled_index()
    before = (len(index), index.documents, results(index, "cat tea"))
    calls = index.embedder.calls
    with pytest.raises(InvalidDocumentError, match=message) as raised:
        index.add([{"id": "ok", "text": "A good document about tea."}, bad, {"id": "late", "text": "also fine"}])
    assert raised.value.position == 1
    assert index.embedder.calls == calls  # rejected before anything was embedded
    assert (len(index), index.documents, results(index, "cat tea")) == before
    assert "ok" not in index


def test_a_failing_embedder_leaves_the_index_unchanged():
    index = filled_index()

    def broken(texts, progress=False):
        raise RuntimeError("out of memory")

    index.embedder.encode = broken
    with pytest.raises(RuntimeError, match="out of memory"):
        index.add([{"id": "new", "text": "text"}])
    assert len(index) == 3 and "new" not in index


def test_an_embedder_of_another_dimension_is_refused():
    index = filled_index()
    index.embedder = HashEmbedder(dim=8, name=index.embedder.name)
    with pytest.raises(ValueError, match="8-dimensional vectors; the index holds 256"):
        index.add([{"id": "new", "text": "text"}])


@pytest.mark.parametrize(
    "config",
    [
        {"kind": "annoy"},
        {"chunk_words": 0},
        {"chunk_words": 10, "chunk_overlap": 10},
        {"chunk_overlap": -1},
        {"nlist": 0},
        {"hnsw_m": 1},
        {"nprobe": 0},
        {"ef_search": 0},
        {"chunk_words": 12.5},
        {"chunk_words": True},
        {"use_gpu": "yes"},
    ],
)
def test_bad_index_config(config):
    with pytest.raises(ValueError):
        IndexConfig(**config)


def test_use_gpu_without_a_gpu_is_an_error():
    import faiss

    if faiss.get_num_gpus() > 0:
        pytest.skip("this machine has a GPU")
    with pytest.raises(RuntimeError, match="sees no GPU"):
        make_index(use_gpu=True)
    assert not make_index(use_gpu=None).on_gpu

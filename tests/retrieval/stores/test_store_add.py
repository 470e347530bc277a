"""``add_to_store``: documents added to an existing collection of every store read back as a FAISS
``DocumentIndex`` that got the same two batches (same rows, same hits); a repeated id, a wrong
embedder or a write that fails half-way leaves the collection as it was."""

from __future__ import annotations

import pytest
from hash_embedder import HashEmbedder
from store_fixtures import CHUNKING, QUERIES, STORES, documents, failing_half_way, store_config

from specdraft.retrieval import DocumentIndex
from specdraft.retrieval.chunker import InvalidDocumentError
from specdraft.retrieval.stores import CollectionNotFoundError, StoreError, add_to_store, build_store, open_store
from specdraft.retrieval.stores.registry import store_module

EMBEDDER = HashEmbedder(dim=64)
FIRST, SECOND = documents(10)[:6], documents(10)[6:]


def ids(results):
    return [[hit.chunk.id for hit in hits] for hits in results]


def contents(store):
    return [store.collection.chunk(i) for i in range(len(store))]


@pytest.mark.parametrize("store", STORES)
def test_added_documents_read_back_as_an_index_given_both_batches(store, tmp_path):
    config = store_config(store, tmp_path)
    build_store(config, FIRST, EMBEDDER, CHUNKING).close()
    added = add_to_store(config, SECOND, EMBEDDER, CHUNKING)
    index = DocumentIndex.create(CHUNKING, EMBEDDER)
    index.add(FIRST)
    assert added == index.add(SECOND)
    reopened = open_store(config, EMBEDDER)
    try:
        assert contents(reopened) == list(index.collection().chunks)  # rows in the order of addition
        # the index's whole ranking cut at k: the canonical answer (ties to the lower row)
        assert ids(reopened.search(QUERIES, 5)) == [row[:5] for row in ids(index.search(QUERIES, len(index)))]
    finally:
        reopened.close()


@pytest.mark.parametrize("store", STORES)
def test_a_failed_add_leaves_the_collection_as_it_was(store, tmp_path, monkeypatch):
    config = store_config(store, tmp_path)
    build_store(config, FIRST, EMBEDDER, CHUNKING).close()
    before = open_store(config, EMBEDDER)
    expected = contents(before)
    before.close()
    with pytest.raises(InvalidDocumentError, match="already in the index|duplicate"):
        add_to_store(config, SECOND + [{"id": "d0", "text": "an id the collection holds"}], EMBEDDER, CHUNKING)
    with pytest.raises(StoreError, match="64-dimensional vectors; the embedder 'hash-bow-32' gives 32"):
        add_to_store(config, SECOND, HashEmbedder(dim=32), CHUNKING)

    module = store_module(store)
    monkeypatch.setattr(module, "open_backend", failing_half_way(module.open_backend))
    with pytest.raises(OSError, match="disk full"):
        add_to_store(config, SECOND, EMBEDDER, CHUNKING)
    monkeypatch.undo()
    after = open_store(config, EMBEDDER)
    try:
        assert contents(after) == expected
    finally:
        after.close()


def test_adding_to_a_missing_collection_is_refused(tmp_path):
    with pytest.raises(CollectionNotFoundError):
        add_to_store(store_config("lancedb", tmp_path / "absent"), SECOND, EMBEDDER, CHUNKING)
    build_store(store_config("lancedb", tmp_path), FIRST, EMBEDDER, CHUNKING).close()
    with pytest.raises(CollectionNotFoundError, match="no table 'other'"):
        add_to_store(store_config("lancedb", tmp_path, collection="other"), SECOND, EMBEDDER, CHUNKING)

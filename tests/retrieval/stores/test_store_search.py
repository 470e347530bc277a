"""Every store's search equals a FAISS ``DocumentIndex``'s on the same documents (same hits, same
order, ties to the lower row), is canonical (``score`` = the ranking's scores; a query's answer
does not depend on its batch or on ``k``), and reads back the same from disk."""

from __future__ import annotations

import numpy as np
import pytest
from hash_embedder import HashEmbedder
from store_fixtures import CHUNKING, QUERIES, STORES, documents, store_config

from specdraft.retrieval import DocumentIndex, PreparedRetriever, Retriever, ScoringRetriever
from specdraft.retrieval.stores import StoreRetriever, build_store, open_store

EMBEDDER = HashEmbedder(dim=64)


@pytest.fixture(scope="module")
def index():
    index = DocumentIndex.create(CHUNKING, EMBEDDER)
    index.add(documents())
    return index


@pytest.fixture(scope="module", params=STORES)
def store(request, tmp_path_factory):
    config = store_config(request.param, tmp_path_factory.mktemp(request.param))
    built = build_store(config, documents(), EMBEDDER, CHUNKING)
    yield built
    built.close()


def ids(results):
    return [[hit.chunk.id for hit in hits] for hits in results]


def test_a_store_is_a_prepared_retriever_over_the_index_chunks(store, index):
    assert isinstance(store, StoreRetriever) and isinstance(store, PreparedRetriever)
    assert isinstance(store, ScoringRetriever) and isinstance(store, Retriever)
    assert store.name == store.config.store and len(store) == len(index)
    assert list(store.collection.ids) == list(index.collection().ids)
    assert [store.collection.chunk(i) for i in range(len(store))] == list(index.collection().chunks)


@pytest.mark.parametrize("k", [1, 3, 8])
def test_search_equals_the_faiss_document_index(store, index, k):
    # FAISS's own top-k keeps any of the records that tie at the k-th place; its whole ranking,
    # sorted by (score, row) as DocumentIndex sorts, cut at k is the canonical answer
    expected = [hits[:k] for hits in index.search(QUERIES, len(index))]
    found = store.search(QUERIES, k)
    assert ids(found) == ids(expected)
    for hits, faiss_hits in zip(found, expected):
        assert [hit.doc for hit in hits] == [hit.doc for hit in faiss_hits]
        assert np.allclose([hit.score for hit in hits], [hit.score for hit in faiss_hits], atol=1e-6)


def test_search_is_canonical_and_score_gives_its_scores(store):
    for query, hits in zip(QUERIES, store.search(QUERIES, 6)):
        keys = [(-hit.score, hit.doc) for hit in hits]
        assert keys == sorted(keys)  # score descending, row ascending
        assert store.score(query, [hit.doc for hit in hits]).tolist() == [hit.score for hit in hits]
        assert store.search([query], 6)[0] == hits  # alone or in a batch
        assert store.search([query, "padding fox"], 2)[0] == hits[:2]  # any k
        prepared = store.prepare([query])
        assert store.search_prepared(prepared, 6)[0] == hits
    rows = [0, len(store) - 1, 5]  # rows no search returned: their vectors are fetched
    assert store.score_prepared(store.prepare(["apple"])[0], rows).shape == (3,)


def test_an_existing_collection_reads_back_the_same(store, index, tmp_path):
    config = store.config
    store.close()  # a local Qdrant folder takes one client at a time
    reopened = open_store(config, EMBEDDER)
    try:
        assert ids(reopened.search(QUERIES, 4)) == ids(index.search(QUERIES, 4))
        assert list(reopened.collection.texts) == list(index.collection().texts)
        assert reopened.collection.chunk(3).metadata == index.collection().chunk(3).metadata
    finally:
        reopened.close()

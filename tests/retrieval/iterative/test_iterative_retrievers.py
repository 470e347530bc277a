"""The three retrievers: canonical ranking, batch and k invariance, score == search's scores."""

import numpy as np
import pytest
from hash_embedder import HashEmbedder

from specdraft.retrieval.iterative import Collection, RetrieverError, make_retriever
from specdraft.retrieval.retriever import rank

TEXTS = [
    "the fox jumps over the dog",
    "a cat sleeps on the mat",
    "dogs and foxes are animals",
    "speculative decoding drafts tokens",
    "retrieval augmented generation quotes documents",
] * 4  # exact duplicates: ties everywhere, broken by the lower row
QUERIES = ["fox dog", "tokens drafts", "zzz qqq", "the cat on a mat", "documents retrieval fox"]


@pytest.fixture(scope="module")
def collection():
    return Collection.from_texts(TEXTS)


@pytest.fixture(scope="module", params=["dense", "hnsw", "bm25"])
def retriever(request, collection):
    return make_retriever(request.param, collection, HashEmbedder(dim=64))


def test_rank_breaks_ties_by_the_lower_row():
    assert rank(np.array([7, 3, 5, 1]), np.array([0.5, 0.9, 0.9, 0.1]), 3) == [(3, 0.9), (5, 0.9), (7, 0.5)]


def test_search_is_canonical_and_matches_score(retriever):
    for query, hits in zip(QUERIES, retriever.search(QUERIES, 6)):
        assert len(hits) == 6
        keys = [(-hit.score, hit.doc) for hit in hits]
        assert keys == sorted(keys)  # score descending, row ascending
        scores = retriever.score(query, [hit.doc for hit in hits])
        assert np.allclose(scores, [hit.score for hit in hits], rtol=0, atol=1e-12)
        if hits[0].score > 0:
            assert hits[0].doc < 5  # the first copy of the best text wins the tie with its duplicates


def test_a_query_gets_the_same_answer_alone_in_a_batch_and_for_any_k(retriever):
    batch = retriever.search(QUERIES, 4)
    for query, hits in zip(QUERIES, batch):
        assert retriever.search([query], 4)[0] == hits
        assert retriever.search([query], 1)[0] == hits[:1]
        assert retriever.search([query, "padding words fox"], 8)[0][:4] == hits


def test_exact_dense_agrees_with_brute_force(collection):
    embedder = HashEmbedder(dim=64)
    retriever = make_retriever("dense", collection, embedder)
    vectors = embedder.encode(TEXTS).astype(np.float64)
    for query in QUERIES:
        scores = vectors @ embedder.encode([query])[0].astype(np.float64)
        expected = sorted(range(len(TEXTS)), key=lambda i: (-round(scores[i], 9), i))[:5]
        assert [hit.doc for hit in retriever.search([query], 5)[0]] == expected


def test_bm25_scores_match_bm25s(collection):
    retriever = make_retriever("bm25", collection)
    for query in QUERIES:
        ids = retriever.query_ids(query)
        if not ids:
            assert [hit.doc for hit in retriever.search([query], 3)[0]] == [0, 1, 2]
            continue
        full = retriever.bm25.get_scores_from_ids(ids)
        assert np.allclose(retriever.score(query, range(len(TEXTS))), full, atol=1e-5)


def test_precomputed_vectors_are_used(collection):
    embedder = HashEmbedder(dim=64)
    vectors = embedder.encode(TEXTS)
    calls = embedder.calls
    retriever = make_retriever("hnsw", collection, embedder, vectors=vectors)
    assert embedder.calls == calls  # the documents were not embedded again
    assert retriever.search(["fox dog"], 1)[0][0].doc == 0


def test_bad_arguments(collection):
    with pytest.raises(ValueError, match="unknown retriever"):
        make_retriever("ivf", collection)
    with pytest.raises(ValueError, match="needs an embedder"):
        make_retriever("dense", collection)
    with pytest.raises(ValueError, match="shape"):
        make_retriever("dense", collection, HashEmbedder(dim=8), vectors=np.ones((3, 8), np.float32))
    retriever = make_retriever("bm25", collection)
    with pytest.raises(ValueError, match="k must be"):
        retriever.search(["fox"], 0)
    with pytest.raises(ValueError, match="rows must lie"):
        retriever.score("fox", [len(TEXTS)])
    with pytest.raises(ValueError, match="one id per text"):
        Collection(["a"], [])
    assert "'bm25' failed: OSError: disk" in str(RetrieverError("bm25", OSError("disk")))

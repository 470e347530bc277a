"""One retriever contract (``specdraft.retrieval.retriever``): the document index and the iterative
retrievers are ``Retriever``s with one ``Hit`` type; capabilities are declared protocols; the RAG
pipeline retrieves through the protocol; an HNSW graph is described once (``HNSWConfig``)."""

from __future__ import annotations

import numpy as np
import pytest
from hash_embedder import HashEmbedder
from index_helpers import DOCS, filled_index, make_index

from specdraft.retrieval import (
    Chunk,
    Collection,
    Hit,
    HNSWConfig,
    IndexConfig,
    PreparedRetriever,
    Retriever,
    ScoringRetriever,
)
from specdraft.retrieval.faiss_index import build_index, import_faiss, unit_rows
from specdraft.retrieval.iterative import make_retriever
from specdraft.retrieval.iterative.dense import DenseHNSWConfig
from specdraft.retrieval.pipeline import RAGConfig, RAGPipeline


def test_the_document_index_is_a_retriever_with_rows_in_its_hits():
    index = filled_index(chunk_words=6, chunk_overlap=1)
    assert isinstance(index, Retriever) and not isinstance(index, ScoringRetriever)
    queries = ["why does my cat purr", "green tea water"]
    batch = index.search(queries, 3)
    assert batch == [index.search(query, 3) for query in queries] == index.search_batch(queries, 3)
    collection = index.collection()
    assert len(collection) == len(index) and collection.ids[0] == f"{DOCS[0]['id']}#0"
    for hits in batch:
        for hit in hits:
            assert isinstance(hit, Hit) and collection.chunk(hit.doc) == hit.chunk


def test_the_index_hands_its_vectors_row_for_row():
    index = filled_index()
    vectors = index.vectors()
    expected = unit_rows(HashEmbedder().encode(index.collection().texts))
    assert vectors.shape == expected.shape and np.allclose(vectors, expected, atol=1e-6)
    empty = make_index()
    assert empty.vectors() is None
    with pytest.raises(ValueError, match="no documents"):
        empty.collection()


@pytest.mark.parametrize("kind", ["dense", "hnsw", "bm25"])
def test_every_iterative_retriever_declares_its_capabilities(kind):
    collection = Collection.from_texts(["the fox jumps", "a cat sleeps", "tea is steeped"])
    retriever = make_retriever(kind, collection, HashEmbedder(dim=32))
    assert (
        isinstance(retriever, PreparedRetriever)
        and isinstance(retriever, ScoringRetriever)
        and isinstance(retriever, Retriever)
    )
    hit = retriever.search(["fox"], 1)[0][0]
    assert hit == Hit(hit.doc, Chunk(str(hit.doc), str(hit.doc), collection.texts[hit.doc]), hit.score)


def test_a_collection_of_chunks_keeps_them():
    chunks = [Chunk("a#0", "a", "first text", {"topic": "x"}), Chunk("a#1", "a", "second text")]
    collection = Collection.from_chunks(chunks)
    assert list(collection.texts) == ["first text", "second text"] and list(collection.ids) == ["a#0", "a#1"]
    assert collection.chunk(0) is chunks[0]
    assert collection.hits([(1, 0.5)]) == [Hit(1, chunks[1], 0.5)]
    with pytest.raises(ValueError, match="one chunk per text"):
        Collection(["x", "y"], ["1", "2"], chunks[:1])


def test_the_rag_pipeline_retrieves_through_any_retriever(tiny_model):
    """BM25 over the index's own chunks, through the same protocol as the index itself."""
    index = filled_index()
    bm25 = make_retriever("bm25", index.collection())
    config = RAGConfig(top_k=2, max_new_tokens=8)
    answer = RAGPipeline(bm25, tiny_model, "reference", None, config).ask("green tea steeped in water")
    assert answer.hits[0].chunk.doc_id == "tea" and len(answer.hits) == 2
    plain = RAGPipeline(bm25, tiny_model, "none", None, config).ask("green tea steeped in water")
    assert answer.token_ids == plain.token_ids


def test_one_hnsw_description_and_the_index_files_are_unchanged():
    """IndexConfig's hnsw_m / ef_search are HNSWConfig's; an "hnsw" document index serialises to the
    very bytes of the graph it was built as before (faiss's default efConstruction, 40)."""
    config = IndexConfig(kind="hnsw", hnsw_m=16, ef_search=20)
    assert config.hnsw == HNSWConfig(m=16, ef_search=20) and config.hnsw.ef_construction == 40
    assert (IndexConfig().hnsw_m, IndexConfig().ef_search) == (HNSWConfig.m, HNSWConfig.ef_search)
    assert DenseHNSWConfig().graph == HNSWConfig(ef_construction=80)
    faiss = import_faiss()
    vectors = unit_rows(np.random.default_rng(0).normal(size=(300, 16)))
    built, kind, _ = build_index(faiss, config, vectors)
    before = faiss.IndexHNSWFlat(16, 16, faiss.METRIC_INNER_PRODUCT)  # how build_index made it before
    before.hnsw.efSearch = 20
    before.add(vectors)
    assert kind == "hnsw" and np.array_equal(faiss.serialize_index(built), faiss.serialize_index(before))
    for bad in ({"m": 1}, {"ef_construction": 0}, {"ef_search": True}):
        with pytest.raises(ValueError):
            HNSWConfig(**bad)

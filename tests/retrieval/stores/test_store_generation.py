"""On every store, generation is exactly plain decoding's: the RAG pipeline with each drafter
(reference, datastore, both) over the store gives the plain answer (and the FAISS index's), and
iterative RAG with speculative retrieval (synchronous and asynchronous verification) gives plain
iterative RAG's answer and documents, stride for stride, on a tiny model."""

from __future__ import annotations

import pytest
from hash_embedder import HashEmbedder
from store_fixtures import QUESTION, STORES, salad_collection, same_answer, store_config

from specdraft import GenerationConfig
from specdraft.retrieval import DocumentIndex, IndexConfig
from specdraft.retrieval.datastore import Datastore
from specdraft.retrieval.iterative import IterativeRAG, IterativeRAGConfig, SpeculativeRetrievalConfig
from specdraft.retrieval.pipeline import DRAFTERS, RAGConfig, RAGPipeline
from specdraft.retrieval.stores import build_store

DOCUMENTS = [
    {"id": "fox", "text": "The quick brown fox jumps over the lazy dog. The dog sleeps all day."},
    {"id": "code", "text": "def add(a, b): return a + b. The function adds two numbers."},
    {"id": "grammar", "text": "Grammar correction returns mostly the text it was given, with a few edits."},
]
EMBEDDER = HashEmbedder()
ITERATIVE = IterativeRAGConfig(stride=3, query_tokens=8, max_new_tokens=15)
GREEDY = GenerationConfig(max_new_tokens=15, ignore_eos=True)
SPECULATIVE = {
    "sync": SpeculativeRetrievalConfig(async_verify=False, max_strides=3),
    "async": SpeculativeRetrievalConfig(async_verify=True, max_strides=3),
}


@pytest.fixture(scope="module")
def datastore(tokenizer):
    return Datastore.build([tokenizer(d["text"]).input_ids for d in DOCUMENTS], vocab_size=len(tokenizer))


@pytest.fixture(scope="module")
def faiss_answer(tiny_model):
    index = DocumentIndex.create(embedder=EMBEDDER)
    index.add(DOCUMENTS)
    return RAGPipeline(index, tiny_model, "none", None, RAGConfig(top_k=2, max_new_tokens=24)).ask(
        "What does the fox do?"
    )


@pytest.mark.parametrize("store_name", STORES)
def test_every_drafter_over_every_store_gives_the_plain_answer(
    store_name, tiny_model, datastore, faiss_answer, tmp_path
):
    store = build_store(store_config(store_name, tmp_path), DOCUMENTS, EMBEDDER)
    try:
        config = RAGConfig(top_k=2, max_new_tokens=24)
        question = "What does the fox do?"
        answers = {d: RAGPipeline(store, tiny_model, d, datastore, config).ask(question) for d in DRAFTERS}
        plain = answers["none"]
        assert [hit.chunk.id for hit in plain.hits] == [hit.chunk.id for hit in faiss_answer.hits]
        assert plain.token_ids == faiss_answer.token_ids
        for drafter, answer in answers.items():
            assert answer.token_ids == plain.token_ids, drafter
    finally:
        store.close()


@pytest.fixture(scope="module")
def salad_documents(tokenizer):
    collection = salad_collection(tokenizer)
    return [{"id": doc_id, "text": text} for doc_id, text in zip(collection.ids, collection.texts)]


@pytest.mark.parametrize("store_name", STORES)
def test_speculative_retrieval_over_every_store_equals_plain_iterative_rag(
    store_name, tiny_model, salad_documents, tmp_path
):
    store = build_store(store_config(store_name, tmp_path), salad_documents, EMBEDDER, IndexConfig(chunk_words=200))
    try:
        assert len(store) == len(salad_documents)  # one chunk a document
        plain = IterativeRAG(tiny_model, store, store.collection, ITERATIVE).generate(QUESTION, GREEDY)
        assert len({record.doc for record in plain.retrievals}) > 1  # the documents change across strides
        for mode, speculative in SPECULATIVE.items():
            answer = IterativeRAG(tiny_model, store, store.collection, ITERATIVE, speculative).generate(
                QUESTION, GREEDY
            )
            same_answer(answer, plain)
            assert answer.stats["speculated_strides"] >= 1, mode
    finally:
        store.close()

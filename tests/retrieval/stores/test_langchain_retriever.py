"""``LangChainRetriever``: a LangChain retriever (an ``InMemoryVectorStore`` over the hash embedder)
feeds the RAG pipeline: hits in the retriever's order, rows kept per document, and every drafter
gives the plain answer on a tiny model."""

from __future__ import annotations

import pytest
from hash_embedder import HashEmbedder
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore

from specdraft.retrieval import Retriever, ScoringRetriever
from specdraft.retrieval.datastore import Datastore
from specdraft.retrieval.pipeline import DRAFTERS, RAGConfig, RAGPipeline
from specdraft.retrieval.stores import LangChainRetriever

TEXTS = {
    "fox": "The quick brown fox jumps over the lazy dog. The dog sleeps all day.",
    "code": "def add(a, b): return a + b. The function adds two numbers.",
    "grammar": "Grammar correction returns mostly the text it was given, with a few edits.",
}


class HashEmbeddings(Embeddings):
    def __init__(self) -> None:
        self.embedder = HashEmbedder()

    def embed_documents(self, texts):
        return self.embedder.encode(texts).tolist()

    def embed_query(self, text):
        return self.embedder.encode([text])[0].tolist()


@pytest.fixture(scope="module")
def langchain_retriever():
    store = InMemoryVectorStore(HashEmbeddings())
    store.add_documents([Document(text, id=key, metadata={"source": f"{key}.txt"}) for key, text in TEXTS.items()])
    return store.as_retriever(search_kwargs={"k": 2})


def test_hits_follow_the_langchain_retriever(langchain_retriever):
    adapter = LangChainRetriever(langchain_retriever)
    assert isinstance(adapter, Retriever) and not isinstance(adapter, ScoringRetriever)
    queries = ["what does the fox do", "add two numbers"]
    found = adapter.search(queries, 5)
    for query, hits in zip(queries, found):
        expected = langchain_retriever.invoke(query)
        assert [hit.chunk.id for hit in hits] == [doc.id for doc in expected]
        assert [hit.chunk.text for hit in hits] == [doc.page_content for doc in expected]
        assert [hit.score for hit in hits] == [1.0, 0.5]
    assert found[0][0].chunk.doc_id == "fox.txt"
    again = adapter.search(["the lazy dog"], 1)[0][0]
    assert again.doc == found[0][0].doc  # one row per document
    seen = list(dict.fromkeys(hit.chunk.id for hits in found for hit in hits))
    assert list(adapter.collection().ids) == seen  # the documents seen, in the order first seen


def test_the_rag_pipeline_over_a_langchain_retriever_gives_the_plain_answer(langchain_retriever, tiny_model, tokenizer):
    datastore = Datastore.build([tokenizer(text).input_ids for text in TEXTS.values()], vocab_size=len(tokenizer))
    adapter = LangChainRetriever(langchain_retriever)
    config = RAGConfig(top_k=2, max_new_tokens=16)
    answers = {d: RAGPipeline(adapter, tiny_model, d, datastore, config).ask("What does the fox do?") for d in DRAFTERS}
    plain = answers["none"]
    assert plain.hits[0].chunk.id == "fox"
    for drafter, answer in answers.items():
        assert answer.token_ids == plain.token_ids, drafter

"""Iterative RAG on smollm2-135m (transformers fp32 and llama.cpp's GGUF as it is) over the demo documents split into
sentences, retrieved by the packaged MiniLM (exact and HNSW) and by BM25: speculative retrieval, synchronous and
asynchronous, with natural and forced cache misses, gives plain iterative RAG's answer token for
token and document for document (greedy and seeded sampling)."""

import re

import pytest
from iterative_fixtures import Disagreeing

from specdraft import GenerationConfig
from specdraft.apps.service.demo import EXAMPLE_DOCUMENTS
from specdraft.retrieval import Embedder
from specdraft.retrieval.iterative import (
    Collection,
    IterativeRAG,
    IterativeRAGConfig,
    SpeculativeRetrievalConfig,
    make_retriever,
)

pytestmark = pytest.mark.slow

QUESTIONS = ["How tall is the Eiffel Tower, and who built it?", "When was the Colosseum built, and by whom?"]
CONFIG = IterativeRAGConfig(stride=4, query_tokens=16, max_new_tokens=24)
GREEDY = GenerationConfig(max_new_tokens=24)
SEEDED = GenerationConfig(max_new_tokens=24, temperature=0.8, seed=3)
ASYNC = SpeculativeRetrievalConfig(async_verify=True, max_strides=3)
SYNC = SpeculativeRetrievalConfig(async_verify=False, max_strides=3)


@pytest.fixture(scope="module", params=["transformers", "llama-cpp"])
def smollm2(request, real_model):
    """The decoder's exact rollback (same passes, same shapes) must hold on both backends' sessions."""
    return real_model("smollm2-135m", request.param)


@pytest.fixture(scope="module")
def collection():
    texts, ids = [], []
    for document in EXAMPLE_DOCUMENTS:
        for i, sentence in enumerate(re.split(r"(?<=\.)\s+", document["text"])):
            texts.append(sentence)
            ids.append(f"{document['id']}#{i}")
    return Collection(texts, ids)


@pytest.fixture(scope="module")
def retrievers(collection):
    embedder = Embedder()
    vectors = embedder.encode(list(collection.texts))
    return {kind: make_retriever(kind, collection, embedder, vectors) for kind in ("dense", "hnsw", "bm25")}


def check(answer, plain):
    assert answer.token_ids == plain.token_ids
    assert answer.docs == plain.docs
    assert answer.text == plain.text


@pytest.mark.parametrize("kind,question", [("dense", QUESTIONS[0]), ("hnsw", QUESTIONS[1]), ("bm25", QUESTIONS[1])])
def test_speculative_retrieval_on_smollm2_equals_plain(smollm2, collection, retrievers, kind, question):
    retriever = retrievers[kind]
    plain = IterativeRAG(smollm2, retriever, collection, CONFIG).generate(question, GREEDY)
    assert plain.text.strip()
    check(IterativeRAG(smollm2, retriever, collection, CONFIG, ASYNC).generate(question, GREEDY), plain)
    if kind == "dense":  # every guess wrong: a rollback at every stride (a shorter answer: each costs a re-prefill)
        short = GenerationConfig(max_new_tokens=12)
        plain = IterativeRAG(smollm2, retriever, collection, CONFIG).generate(question, short)
        wrong = Disagreeing(retriever, [r.query for r in plain.retrievals])
        forced = IterativeRAG(smollm2, wrong, collection, CONFIG, SYNC).generate(question, short)
        check(forced, plain)
        assert forced.stats["rollbacks"] == len(plain.retrievals) - 1 >= 2


def test_seeded_sampling_on_smollm2(smollm2, collection, retrievers):
    retriever = retrievers["bm25"]
    plain = IterativeRAG(smollm2, retriever, collection, CONFIG).generate(QUESTIONS[0], SEEDED)
    check(IterativeRAG(smollm2, retriever, collection, CONFIG, ASYNC).generate(QUESTIONS[0], SEEDED), plain)

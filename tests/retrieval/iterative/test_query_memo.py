"""One embedding per distinct query and answer: the speculative cache's scoring and the batched
verification share each query's vector (``query_memo.QueryMemo``), and the answers stay plain's."""

from collections import Counter

import numpy as np
import pytest
from hash_embedder import HashEmbedder
from iterative_fixtures import QUESTION, salad_collection

from specdraft import GenerationConfig
from specdraft.retrieval.iterative import IterativeRAG, IterativeRAGConfig, SpeculativeRetrievalConfig, make_retriever
from specdraft.retrieval.iterative.query_memo import QueryMemo
from specdraft.retrieval.retriever import PreparedRetriever

CONFIG = IterativeRAGConfig(stride=3, query_tokens=8, max_new_tokens=15)
GREEDY = GenerationConfig(max_new_tokens=15, ignore_eos=True)
SYNC = SpeculativeRetrievalConfig(async_verify=False, max_strides=3)
ASYNC = SpeculativeRetrievalConfig(async_verify=True, max_strides=3)


class CountingEmbedder(HashEmbedder):
    """A tiny embedder that counts how often each text is embedded."""

    def __init__(self, dim: int = 64) -> None:
        super().__init__(dim=dim, name=f"hash-bow-{dim}")
        self.embedded: Counter = Counter()

    def encode(self, texts, progress: bool = False):
        self.embedded.update(texts)
        return super().encode(texts, progress)


class DisagreeingPrepared:
    """A prepared retriever whose scores make the cache guess wrong for the chosen queries (as
    ``iterative_fixtures.Disagreeing``); its prepared form carries the query text along."""

    def __init__(self, inner, wrong_queries=()) -> None:
        self.inner = inner
        self.name = inner.name
        self.wrong = set(wrong_queries)

    def prepare(self, queries):
        return list(zip(queries, self.inner.prepare(queries)))

    def search_prepared(self, prepared, k):
        return self.inner.search_prepared([form for _, form in prepared], k)

    def score_prepared(self, prepared, docs):
        query, form = prepared
        scores = self.inner.score_prepared(form, docs)
        if query not in self.wrong:
            return scores
        top = self.inner.search_prepared([form], 1)[0][0].doc
        return np.where(np.asarray(docs) == top, -1.0, 0.0)

    def search(self, queries, k):
        return self.search_prepared(self.prepare(queries), k)

    def score(self, query, docs):
        return self.score_prepared(self.prepare([query])[0], docs)


@pytest.fixture(scope="module")
def collection(tokenizer):
    return salad_collection(tokenizer)


@pytest.fixture(scope="module")
def counted(collection):
    """Dense and HNSW retrievers over one counting embedder (the documents embedded at build)."""
    embedder = CountingEmbedder()
    built = {kind: make_retriever(kind, collection, embedder) for kind in ("dense", "hnsw")}
    return embedder, built


def test_every_retriever_prepares_queries(collection):
    for kind in ("dense", "hnsw", "bm25"):
        retriever = make_retriever(kind, collection, HashEmbedder(dim=64))
        assert isinstance(retriever, PreparedRetriever)


@pytest.mark.parametrize("kind", ["dense", "hnsw", "bm25"])
def test_the_memo_answers_what_the_retriever_answers(collection, kind):
    retriever = make_retriever(kind, collection, HashEmbedder(dim=64))
    memo = QueryMemo(retriever)
    queries = ["doc3 fox dog", "the lazy dog", "doc3 fox dog", "zzz"]
    assert memo.search(queries, 5) == retriever.search(queries, 5)
    docs = list(range(len(collection)))
    for query in queries:
        assert np.array_equal(memo.score(query, docs), retriever.score(query, docs))
    assert len(memo) == 3  # distinct queries
    with pytest.raises(ValueError):
        memo.search([7], 1)  # type: ignore[list-item]


def test_a_retriever_without_prepare_is_called_as_it_is(collection):
    class Plain:
        name = "plain"

        def __init__(self, inner):
            self.inner, self.calls = inner, []

        def search(self, queries, k):
            self.calls.append(("search", tuple(queries)))
            return self.inner.search(queries, k)

        def score(self, query, docs):
            self.calls.append(("score", query))
            return self.inner.score(query, docs)

    plain = Plain(make_retriever("bm25", collection))
    memo = QueryMemo(plain)
    assert not memo.prepares
    memo.search(["fox"], 2)
    memo.score("fox", [0, 1])
    assert plain.calls == [("search", ("fox",)), ("score", "fox")]


def test_a_query_scored_and_searched_directly_is_embedded_twice_through_the_memo_once(counted):
    embedder, built = counted
    retriever = built["dense"]
    embedder.embedded.clear()
    retriever.score("fox dog doc2", [0, 1])
    retriever.search(["fox dog doc2"], 1)
    assert embedder.embedded["fox dog doc2"] == 2  # what speculation cost before the memo
    embedder.embedded.clear()
    memo = QueryMemo(retriever)
    memo.score("fox dog doc2", [0, 1])
    memo.search(["fox dog doc2", "fox dog doc2"], 1)
    assert embedder.embedded == Counter({"fox dog doc2": 1})


@pytest.mark.parametrize("kind", ["dense", "hnsw"])
@pytest.mark.parametrize("speculative", [SYNC, ASYNC], ids=["sync", "async"])
@pytest.mark.parametrize("where", ["none", "middle", "every"])
def test_speculative_rag_embeds_each_distinct_query_once(tiny_model, collection, counted, kind, speculative, where):
    embedder, built = counted
    embedder.embedded.clear()
    plain = IterativeRAG(tiny_model, built[kind], collection, CONFIG).generate(QUESTION, GREEDY)
    plain_queries = [r.query for r in plain.retrievals]
    assert set(embedder.embedded) == set(plain_queries) and set(embedder.embedded.values()) == {1}

    n = len(plain.retrievals)
    strides = {"none": [], "middle": [n // 2], "every": list(range(1, n))}[where]
    retriever = DisagreeingPrepared(built[kind], [plain_queries[i] for i in strides])
    embedder.embedded.clear()
    answer = IterativeRAG(tiny_model, retriever, collection, CONFIG, speculative).generate(QUESTION, GREEDY)
    assert answer.token_ids == plain.token_ids and answer.docs == plain.docs
    assert [r.query for r in answer.retrievals] == plain_queries
    assert all(answer.retrievals[i].status == "rolled_back" for i in strides)
    assert answer.stats["searched_queries"] >= n  # every stride's query was verified (or searched)
    # every query the answer met (its strides', and any speculated past a wrong guess) embedded once
    assert set(plain_queries) <= set(embedder.embedded)
    assert set(embedder.embedded.values()) == {1}, embedder.embedded

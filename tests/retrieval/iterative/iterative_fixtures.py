"""Shared pieces of the iterative RAG tests: a word-salad collection the tiny models' answers
overlap with (so the retrieved document changes from stride to stride), the three retrievers over
it, and a reference implementation of plain iterative RAG with no cache reuse at all."""

from __future__ import annotations

import threading
import time

import numpy as np
from hash_embedder import HashEmbedder

from specdraft.retrieval.iterative import Collection, make_retriever
from specdraft.retrieval.iterative.prompt import build_layout

QUESTION = "What does the quick brown fox do with the lazy dog?"


def salad_collection(tokenizer, n_docs: int = 24, words: int = 14, seed: int = 0) -> Collection:
    """``n_docs`` documents of random vocabulary pieces (and a few plain words), deterministic."""
    rng = np.random.default_rng(seed)
    vocab = len(tokenizer)
    texts = []
    for i in range(n_docs):
        ids = rng.integers(1, vocab, size=words).tolist()
        texts.append(f"doc{i} fox dog " + tokenizer.decode(ids))
    return Collection(texts, [f"d{i}" for i in range(n_docs)])


def retrievers(collection: Collection) -> dict:
    embedder = HashEmbedder(dim=64)
    return {kind: make_retriever(kind, collection, embedder) for kind in ("dense", "hnsw", "bm25")}


def reference_answer(model, retriever, collection, config, question: str, max_new_tokens: int, ignore_eos: bool = True):
    """Plain iterative RAG the slow, obvious way: every token from a fresh full-context pass."""
    layout = build_layout(model, collection, question, config.instruction)
    answer: list[int] = []
    docs_per_stride = []
    eos = frozenset() if ignore_eos else model.eos_token_ids
    while len(answer) < max_new_tokens:
        query_ids = (layout.query_ids + answer)[-config.query_tokens :]
        hits = retriever.search([model.tokenizer.decode(query_ids)], config.docs_in_prompt)[0]
        docs = tuple(hit.doc for hit in hits[: config.docs_in_prompt])
        docs_per_stride.append(docs)
        done = False
        for _ in range(config.stride):
            logits = model.new_session().feed(layout.prompt_ids(docs, answer), all_logits=False)[-1]
            answer.append(int(logits.argmax()))
            if answer[-1] in eos or len(answer) >= max_new_tokens:
                done = True
                break
        if done:
            break
    return answer, docs_per_stride


class Disagreeing:
    """A retriever whose ``score`` makes the cache guess wrong for the chosen queries: the true top
    document scores lowest, every other cached document the same (the lowest row wins).
    ``delay``: seconds each ``search`` sleeps (so an asynchronous verification is still running
    while the model generates); ``threads`` records the thread of each search."""

    def __init__(self, inner, wrong_queries=(), delay: float = 0.0) -> None:
        self.inner = inner
        self.name = inner.name
        self.wrong = set(wrong_queries)
        self.delay = delay
        self.threads: list[str] = []

    def search(self, queries, k):
        self.threads.append(threading.current_thread().name)
        if self.delay:
            time.sleep(self.delay)
        return self.inner.search(queries, k)

    def score(self, query, docs):
        scores = self.inner.score(query, docs)
        if query not in self.wrong:
            return scores
        top = self.inner.search([query], 1)[0][0].doc
        return np.where(np.asarray(docs) == top, -1.0, 0.0)


def same_answer(answer, plain) -> None:
    """The speculative ``answer`` equals the ``plain`` one: tokens, documents per stride, text, queries."""
    assert answer.token_ids == plain.token_ids
    assert answer.docs == plain.docs
    assert answer.text == plain.text
    assert [r.query for r in answer.retrievals] == [r.query for r in plain.retrievals]
    assert [r.stride for r in answer.retrievals] == list(range(len(plain.retrievals)))

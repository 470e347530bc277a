"""Shared pieces of the iterative RAG tests: a word-salad collection the tiny models' answers
overlap with (so the retrieved document changes from stride to stride), the three retrievers over
it, and a reference implementation of plain iterative RAG with no cache reuse at all."""

from __future__ import annotations

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

"""The iterative-RAG benchmark on a tiny model, a small collection and hashed embeddings: every
method runs, speculation is identical to plain, the report is written; the knowledge base's
chunking, deduplication and embedding cache."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hash_embedder import HashEmbedder

from specdraft.apps.bench import kb_corpus, kb_embeddings
from specdraft.apps.bench.iterative_bench import METHODS, IterativeBenchConfig, run_iterative_bench
from specdraft.apps.bench.iterative_report import markdown, write_iterative_report
from specdraft.apps.bench.kb_corpus import KBChunks, KBConfig, build_chunks, chunks_digest
from specdraft.apps.bench.kb_embeddings import EmbeddingCacheConfig, kb_vectors
from specdraft.apps.model_pool import ModelPool

TOPICS = ["rivers", "volcanoes", "castles", "comets", "forests", "glaciers", "markets", "railways"]


def small_chunks() -> KBChunks:
    texts = [f"The {topic} of region {n} are described here. {topic} number {n} has facts about {topic}."
             for topic in TOPICS for n in range(6)]
    return KBChunks([f"t/{i}#0" for i in range(len(texts))], texts, ["test"] * len(texts))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECDRAFT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_bench_runs_every_method_identically_and_writes_the_report(tiny_model, tmp_path):
    pool = ModelPool()
    pool.add("tiny", tiny_model)
    chunks = small_chunks()
    embedder = HashEmbedder(64)
    vectors = embedder.encode(chunks.texts)
    questions = [{"id": "q1", "question": "Which rivers of region 2?"}, {"id": "q2", "question": "comets and glaciers"}]
    config = IterativeBenchConfig(models=("tiny",), limit=2, max_new_tokens=12, stride=2, query_tokens=8, max_strides=3)
    result = run_iterative_bench(config, progress=lambda _: None, pool=pool, chunks=chunks, vectors=vectors,
                                 embedder=embedder, questions=questions)
    assert len(result["runs"]) == 3 * len(METHODS) * 2
    assert all(run["identical"] for run in result["runs"])
    rows = result["summaries"]
    assert [(r["retriever"], r["method"]) for r in rows] == [(k, m) for k in ("dense", "hnsw", "bm25") for m in METHODS]
    assert all(r["identical_rate"] == 1.0 and r["answers"] == 2 for r in rows)
    plain = [r for r in rows if r["method"] == "plain"]
    assert all(r["speedup"] == 1.0 and r["cache_hit_rate"] is None for r in plain)
    assert set(result["retrievers"]) == {"dense", "hnsw", "bm25"}
    assert result["retrievers"]["dense"]["faiss_flat_search_s"] > 0
    assert all(facts["prepare_s"] > 0 and facts["prepared_search_s"] > 0 for facts in result["retrievers"].values())
    assert result["collection"]["chunks"] == len(chunks)
    paths = write_iterative_report(result, tmp_path / "out")
    assert json.loads(paths["json"].read_text())["summaries"] == rows
    assert paths["plot"].stat().st_size > 0
    text = markdown(result)
    assert "| tiny | dense | speculative+async+os3 |" in text and "paper's speed-up" in text


def test_bench_config_rejects_unknown_retrievers():
    with pytest.raises(ValueError, match="retrievers"):
        IterativeBenchConfig(retrievers=("dense", "ivf"))


def test_build_chunks_chunks_drops_short_and_duplicate_chunks(monkeypatch):
    long_text = " ".join(f"Sentence {i} is here." for i in range(40))  # 160 words
    records = [("squad", "a", long_text), ("news", "b", "Too short."), ("sharegpt", "c", long_text.upper()),
               ("sharegpt", "d", "A different text with enough words to be kept as one chunk of its own.")]
    monkeypatch.setattr(kb_corpus, "_records", lambda: iter(records))
    chunks = build_chunks(KBConfig(chunk_words=64, min_words=8, max_chunks=0))
    assert chunks.sources.count("squad") == 3  # 160 words -> 3 windows of at most 64 words
    assert "news" not in chunks.sources  # too short
    assert chunks.ids[-1] == "sharegpt/d#0" and chunks.sources.count("sharegpt") == 1  # upper-case copy deduplicated
    assert all(len(t.split()) <= 64 for t in chunks.texts)
    capped = build_chunks(KBConfig(chunk_words=64, min_words=8, max_chunks=2))
    assert capped.texts == chunks.texts[:2]


def test_kb_vectors_are_cached_by_content(cache):
    embedder = HashEmbedder(32)
    texts = [f"text number {i} about things" for i in range(10)]
    config = EmbeddingCacheConfig(shard_size=4)
    first = kb_vectors(texts, embedder, config)
    assert first.shape == (10, 32) and np.allclose(np.linalg.norm(first, axis=1), 1.0)
    assert np.allclose(first, embedder.encode(texts))
    calls = embedder.calls
    again = kb_vectors(texts, embedder, config)
    assert embedder.calls == calls and np.array_equal(again, first)
    assert len(list(kb_embeddings.vectors_dir(embedder, config).glob("shard-*.npy"))) == 3
    prefix = kb_vectors(texts[:8], embedder, config)  # whole shards of a prefix are reused
    assert embedder.calls == calls and np.array_equal(prefix, first[:8])
    kb_vectors(texts[:9], embedder, config)  # a new last shard is embedded
    assert embedder.calls == calls + 1
    assert chunks_digest(texts) != chunks_digest(texts[:9])


def test_kb_vectors_resume_from_shards_and_know_the_embedded_prefix(cache):
    embedder = HashEmbedder(16)
    texts = [f"resumable text {i}" for i in range(9)]
    config = EmbeddingCacheConfig(shard_size=4)
    assert kb_embeddings.embedded_prefix(texts, embedder, config) == 0
    kb_vectors(texts[:4], embedder, config)  # a run cut off after one shard
    assert kb_embeddings.embedded_prefix(texts, embedder, config) == 4
    embedder.texts = 0
    vectors = kb_vectors(texts, embedder, config)
    assert embedder.texts == 5 and vectors.shape == (9, 16)
    assert kb_embeddings.embedded_prefix(texts, embedder, config) == 9

"""The iterative-RAG benchmark on a tiny model, a small collection and hashed embeddings: every
method runs, speculation is identical to plain, the report is written; the knowledge base's
chunking, deduplication and embedding cache."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hash_embedder import HashEmbedder

from specdraft import ModelConfig
from specdraft.apps.bench.datasets import kb_corpus, kb_embeddings
from specdraft.apps.bench.datasets.kb_corpus import KBChunks, KBConfig, build_chunks, chunks_digest
from specdraft.apps.bench.datasets.kb_embeddings import EmbeddingCacheConfig, kb_vectors
from specdraft.apps.bench.iterative_bench import METHODS, IterativeBenchConfig, run_iterative_bench
from specdraft.apps.bench.iterative_report import markdown, write_iterative_report
from specdraft.apps.model_pool import ModelPool

TOPICS = ["rivers", "volcanoes", "castles", "comets", "forests", "glaciers", "markets", "railways"]


def small_chunks() -> KBChunks:
    texts = [
        f"The {topic} of region {n} are described here. {topic} number {n} has facts about {topic}."
        for topic in TOPICS
        for n in range(6)
    ]
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
    result = run_iterative_bench(
        config,
        progress=lambda _: None,
        pool=pool,
        chunks=chunks,
        vectors=vectors,
        embedder=embedder,
        questions=questions,
    )
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
    assert result["models"]["tiny"]["backend"] == "transformers" and result["models"]["tiny"]["one_token_pass_s"] > 0
    text = markdown(result)
    assert "| tiny | dense | speculative+async+os3 |" in text and "paper's speed-up" in text
    assert "tiny (transformers) " in text and " [" in text  # the decoding step, with the bare one-token pass


def test_bench_config_rejects_unknown_retrievers():
    with pytest.raises(ValueError, match="retrievers"):
        IterativeBenchConfig(retrievers=("dense", "ivf"))


def test_bench_config_rejects_a_backend_without_a_local_kv_cache():
    with pytest.raises(ValueError, match="engine"):
        IterativeBenchConfig(backend="engine")


def test_build_chunks_chunks_drops_short_and_duplicate_chunks(monkeypatch):
    long_text = " ".join(f"Sentence {i} is here." for i in range(40))  # 160 words
    records = [
        ("squad", "a", long_text),
        ("news", "b", "Too short."),
        ("sharegpt", "c", long_text.upper()),
        ("sharegpt", "d", "A different text with enough words to be kept as one chunk of its own."),
    ]
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


def tiny_bench(tiny_model, pool=None, **overrides):
    """The tiny bench of the first test, one retriever, three questions."""
    if pool is None:
        pool = ModelPool()
        pool.add("tiny", tiny_model)
    chunks = small_chunks()
    embedder = HashEmbedder(64)
    questions = [
        {"id": "q1", "question": "Which rivers of region 2?"},
        {"id": "q2", "question": "comets and glaciers"},
        {"id": "q3", "question": "railways and markets of region 4"},
    ]
    config = IterativeBenchConfig(
        **{
            "models": ("tiny",),
            "retrievers": ("bm25",),
            "limit": 3,
            "max_new_tokens": 12,
            "stride": 2,
            "query_tokens": 8,
            "max_strides": 3,
            **overrides,
        }
    )
    return run_iterative_bench(
        config, progress=lambda _: None, pool=pool, chunks=chunks, vectors=None, embedder=embedder, questions=questions
    )


@pytest.mark.parametrize("per_answer", [False, True])
def test_one_os3_scheduler_per_method_across_the_questions_unless_per_answer(tiny_model, monkeypatch, per_answer):
    """By default each speculative method's answers all use one OS^3 scheduler (its estimates carry
    over); ``scheduler_per_answer`` gives every answer a fresh one. Answers are plain's either way; the
    results say which, and the speculative rows count OS^3's plain strides."""
    from specdraft.retrieval.iterative import speculative

    used: list = []  # (speculative config, scheduler) per speculative answer, in order
    real = speculative.answer_speculatively

    def spy(state, config, scheduler=None):
        used.append((config, scheduler))
        return real(state, config, scheduler)

    monkeypatch.setattr(speculative, "answer_speculatively", spy)
    result = tiny_bench(tiny_model, scheduler_per_answer=per_answer)
    assert all(run["identical"] for run in result["runs"])
    assert len(used) == 2 * 3  # two speculative methods, three questions
    for method in ("speculative", "speculative+async+os3"):
        schedulers = [s for config, s in used if config.async_verify == (method != "speculative")]
        assert len(schedulers) == 3 and all(s is not None for s in schedulers)
        distinct = len({id(s) for s in schedulers})  # the schedulers are all still referenced by `used`
        assert distinct == (3 if per_answer else 1)
    assert result["config"]["scheduler_per_answer"] is per_answer
    rows = {row["method"]: row for row in result["summaries"]}
    assert rows["plain"]["plain_strides"] is None
    for method in ("speculative", "speculative+async+os3"):
        row = rows[method]
        assert row["strides"] > 0 and 0 <= row["plain_strides"] <= row["strides"]
        assert row["plain_strides"] == sum(r["stats"]["plain_strides"] for r in result["runs"] if r["method"] == method)
    assert rows["speculative"]["plain_strides"] == 0  # OS^3 off: never plain
    text = markdown(result)
    assert ("a fresh one per answer" in text) == per_answer and ("shared by all the questions" in text) != per_answer
    assert (
        "plain strides (OS^3 s = 0)" in text
        and f"| {rows['speculative']['plain_strides']}/{rows['speculative']['strides']} |" in text
    )


class SentinelStop(Exception):
    """Raised by a stand-in to stop the command once its configuration is known."""


def test_cli_passes_device_and_scheduler_choice_to_the_bench(monkeypatch, tmp_path):
    """``specdraft bench iterative-rag --device cuda --scheduler-per-answer`` parses (no GPU needed)
    and reaches ``IterativeBenchConfig``; the defaults share the scheduler."""
    from specdraft.apps.bench import iterative_bench
    from specdraft.apps.cli.entry_point import main

    seen: list[IterativeBenchConfig] = []

    def capture(config, *args, **kwargs):
        seen.append(config)
        raise SentinelStop

    monkeypatch.setattr(iterative_bench, "run_iterative_bench", capture)
    for extra in (["--device", "cuda", "--scheduler-per-answer"], [], ["--backend", "llama-cpp"]):
        with pytest.raises(SentinelStop):
            main(["bench", "iterative-rag", "--limit", "2", "--models", "smollm2-135m", "--out", str(tmp_path), *extra])
    assert seen[0].device == "cuda" and seen[0].scheduler_per_answer is True and seen[0].models == ("smollm2-135m",)
    assert seen[1].scheduler_per_answer is False and seen[1].backend == "auto"
    assert seen[2].backend == "llama-cpp"


def test_the_bench_device_goes_to_the_models_only(tiny_model, monkeypatch):
    """``device="cuda"`` builds the model pool on CUDA (a stand-in pool here: no GPU on this machine)
    while the retrievers are built here as on the CPU; the real pool would load the model on CUDA."""
    from specdraft.apps import model_pool

    pools: list = []

    class RecordingPool:
        def __init__(self, model):
            pools.append((model.device, model.dtype, model.backend))

        def get(self, name):
            return tiny_model

    monkeypatch.setattr(model_pool, "ModelPool", RecordingPool)
    config = IterativeBenchConfig(
        models=("tiny",), retrievers=("bm25",), limit=1, max_new_tokens=6, stride=2, query_tokens=8, device="cuda"
    )
    result = run_iterative_bench(
        config,
        progress=lambda _: None,
        chunks=small_chunks(),
        embedder=HashEmbedder(64),
        questions=[{"id": "q1", "question": "Which rivers of region 2?"}],
    )
    assert pools == [("cuda", "auto", "auto")]
    assert result["config"]["device"] == "cuda" and all(run["identical"] for run in result["runs"])
    assert (
        ModelPool(ModelConfig(device="cuda")).config("smollm2-135m").device == "cuda"
    )  # what the real pool would load with


def test_cli_max_new_tokens_is_the_given_value_even_when_it_equals_the_generation_default(monkeypatch, tmp_path):
    """``specdraft bench iterative-rag --max-new-tokens 128`` runs 128 tokens (128, the generation
    default, used to read as "not given" and ran the bench's own 64); without the flag: the bench's own."""
    from specdraft import GenerationConfig
    from specdraft.apps.bench import iterative_bench
    from specdraft.apps.cli.entry_point import main

    seen: list[IterativeBenchConfig] = []

    def capture(config, *args, **kwargs):
        seen.append(config)
        raise SentinelStop

    monkeypatch.setattr(iterative_bench, "run_iterative_bench", capture)
    generation_default = GenerationConfig().max_new_tokens
    for extra in (["--max-new-tokens", str(generation_default)], [], ["--max-new-tokens", "32"]):
        with pytest.raises(SentinelStop):
            main(["bench", "iterative-rag", "--limit", "2", "--models", "smollm2-135m", "--out", str(tmp_path), *extra])
    assert [config.max_new_tokens for config in seen] == [generation_default, IterativeBenchConfig().max_new_tokens, 32]

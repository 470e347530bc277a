"""``specdraft bench iterative-rag``: plain iterative RAG vs speculative retrieval (RaLMSpec), measured.

Setting (``IterativeBenchConfig``): the knowledge base of ``kb_corpus`` (200,000 real text chunks,
module docstring there) with its cached MiniLM vectors (``kb_embeddings``); the first ``limit``
squad_shifts questions whose passages are in it (``kb_corpus.kb_questions``); each model of
``models`` on ``backend`` (transformers: float32; llama-cpp: the GGUF file as it is, several times
faster per token on a CPU, so retrieval weighs more); each retriever of ``retrievers`` (``dense``:
exact FAISS flat, ``hnsw``: FAISS HNSW, ``bm25``: bm25s), all built once over the same collection.

Methods, all through ``specdraft.retrieval.iterative.IterativeRAG`` with the same
``IterativeRAGConfig`` (``stride``, ``query_tokens``, ``max_new_tokens``), greedy:

* ``plain``: every stride's retrieval from the real retriever, in line;
* ``speculative``: answered from the per-request cache for ``max_strides`` strides, then one
  batched verification, in line (no overlap), fixed stride count (OS^3 off);
* ``speculative+async+os3``: the same with the verification on a worker thread while the model
  keeps generating, and the OS^3 scheduler choosing the stride count (or a plain stride, s = 0).

OS^3 scheduler (``scheduler_per_answer``): by default one pipeline, so one scheduler, per (model,
retriever, method) answers all the questions, as an application keeps one (the service keeps one per
index version and model: ``specdraft.apps.iterative_rag``), so its estimates carry from one answer to
the next and it may go plain where speculation does not pay; ``scheduler_per_answer=True``
(``--scheduler-per-answer``) builds a new pipeline, so a fresh scheduler from its prior, per answer.
Answers are the same either way; only the speed differs. The result's ``config`` says which.

For each question the methods run back to back (plain first), so slow drifts of a shared machine
hit them alike. Measured per answer: wall seconds (``time.perf_counter`` around ``generate``; the
real wall clock, overlap included), the answer's own stats (retrieval and generation seconds, cache
hits, rollbacks), the token ids and the documents used per stride. ``identical`` means token ids
*and* documents per stride equal plain's. Also measured once per setting: each retriever's build
time, the time of one query's search (median over ``probe_queries`` questions: the whole
``search([q], 1)``; split into ``prepare`` (dense: the query's embedding; BM25: its tokenization)
and ``search_prepared``, the part a verification pays since the speculative cache has prepared the
query already; for exact dense also the bare FAISS ``IndexFlatIP.search`` of one vector), and
each model's decoding step (plain's generation seconds per generated token, re-prefills
included) and its bare one-token pass (``probe_one_token_pass``).

Summaries (``summarize``) per (model, retriever, method): speed-up = plain's total wall / the
method's total wall over the same questions; retrieval share = retrieval seconds (inside retriever calls, any thread) /
wall seconds; wait share = seconds the answering thread was blocked on a search / wall seconds (equal for plain);
cache hit rate = strides answered from the cache and confirmed / strides answered from the cache;
rollbacks per answer; plain strides = strides OS^3 retrieved plainly (s = 0) of all strides (None for
methods whose stats do not carry them); identical rate. Reports: ``iterative_report``.
"""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, Sequence

import numpy as np

from specdraft.model_config import LOCAL_BACKENDS
from specdraft.retrieval.retriever import PreparedRetriever

from .datasets.kb_corpus import KBConfig, kb_questions, load_chunks
from .datasets.kb_embeddings import EmbeddingCacheConfig, capped_embedder, kb_vectors

__all__ = ["METHODS", "IterativeBenchConfig", "Run", "run_iterative_bench", "summarize", "docs_per_stride"]

METHODS = ("plain", "speculative", "speculative+async+os3")
ITERATIVE_BACKENDS = ("auto", *LOCAL_BACKENDS)  # the backends whose models keep a session (KV cache) here


@dataclass(frozen=True)
class IterativeBenchConfig:
    models: tuple[str, ...] = ("smollm2-135m", "qwen2.5-coder-0.5b")
    retrievers: tuple[str, ...] = ("dense", "hnsw", "bm25")
    limit: int = 10
    seed: int = 0
    max_new_tokens: int = 64
    stride: int = 4
    query_tokens: int = 32
    max_strides: int = 4
    probe_queries: int = 50
    collection_size: int = 0  # the first this many chunks of the knowledge base (0: all)
    device: str = "cpu"  # the models' device (cuda: the model on the GPU; the embedder, FAISS and BM25 stay on the CPU)
    dtype: str = "auto"
    backend: str = "auto"  # the models' backend: transformers (float32) or llama-cpp (the GGUF file as it is)
    kb: KBConfig = KBConfig()
    embedding: EmbeddingCacheConfig = EmbeddingCacheConfig()
    scheduler_per_answer: bool = False  # True: a fresh OS^3 scheduler per answer (module docstring)

    def __post_init__(self) -> None:
        if self.limit < 1 or self.max_new_tokens < 1 or self.probe_queries < 1:
            raise ValueError("limit, max_new_tokens and probe_queries must be >= 1")
        if self.collection_size < 0:
            raise ValueError(f"collection_size must be >= 0, got {self.collection_size}")
        unknown = set(self.retrievers) - {"dense", "hnsw", "bm25"}
        if unknown or not self.retrievers:
            raise ValueError(f"retrievers must be among dense, hnsw, bm25, got {self.retrievers}")
        if not self.models:
            raise ValueError("name at least one model")
        if self.backend not in ITERATIVE_BACKENDS:
            raise ValueError(
                f"iterative RAG runs on {', '.join(ITERATIVE_BACKENDS)} (it needs a local model's KV cache), got "
                f"{self.backend!r}"
            )


@dataclass
class Run:
    """One answer of one method."""

    model: str
    retriever: str
    method: str
    question_id: str
    wall_s: float
    tokens: int
    token_ids: list[int]
    docs: list[list[int]]
    stats: dict[str, Any]
    identical: bool = True


def speculative_config(method: str, config: IterativeBenchConfig):
    """The ``SpeculativeRetrievalConfig`` of a method (None for plain)."""
    from specdraft.retrieval.iterative import SpeculativeRetrievalConfig

    if method == "plain":
        return None
    if method == "speculative":
        return SpeculativeRetrievalConfig(enabled=True, max_strides=config.max_strides, os3=False, async_verify=False)
    if method == "speculative+async+os3":
        return SpeculativeRetrievalConfig(enabled=True, max_strides=config.max_strides, os3=True, async_verify=True)
    raise ValueError(f"unknown method {method!r}")


def docs_per_stride(answer: Any) -> list[list[int]]:
    """The documents put in the prompt at each stride, in stride order (one record per stride)."""
    return [list(record.docs) for record in answer.retrievals]


def answer_run(
    rag: Any, question: dict, generation: Any, model: str, kind: str, method: str, reference: "Run | None"
) -> Run:
    """One timed answer of ``question`` by ``rag`` as a ``Run``, ``identical`` against ``reference``'s
    tokens and documents (itself when ``reference`` is None)."""
    started = time.perf_counter()
    answer = rag.generate(question["question"], generation)
    wall = time.perf_counter() - started
    run = Run(
        model,
        kind,
        method,
        question["id"],
        wall,
        len(answer.token_ids),
        list(answer.token_ids),
        docs_per_stride(answer),
        dict(answer.stats),
    )
    reference = reference or run
    run.identical = run.token_ids == reference.token_ids and run.docs == reference.docs
    return run


def _median_seconds(calls: Sequence[Callable[[], Any]]) -> float:
    times = []
    for call in calls:
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def probe_search(
    kind: str, retriever: Any, questions: Sequence[str], vectors: np.ndarray | None, embedder: Any
) -> dict[str, float]:
    """Median seconds of one query's ``search([q], 1)``; for exact dense also the bare FAISS flat search."""
    retriever.search([questions[0]], 1)  # warm-up
    facts = {"search_s": _median_seconds([lambda q=q: retriever.search([q], 1) for q in questions])}
    if isinstance(retriever, PreparedRetriever):  # what a verification costs once the cache has prepared the query
        prepared = retriever.prepare(list(questions))
        facts["prepare_s"] = _median_seconds([lambda q=q: retriever.prepare([q]) for q in questions])
        facts["prepared_search_s"] = _median_seconds([lambda p=p: retriever.search_prepared([p], 1) for p in prepared])
    if kind == "dense" and vectors is not None:
        from specdraft.retrieval.faiss_index import import_faiss

        faiss = import_faiss()
        index = faiss.IndexFlatIP(vectors.shape[1])
        index.add(np.ascontiguousarray(vectors, dtype=np.float32))
        query_vectors = embedder.encode(list(questions))
        facts["faiss_flat_search_s"] = _median_seconds([lambda v=v: index.search(v[None, :], 1) for v in query_vectors])
        facts["embed_query_s"] = _median_seconds([lambda q=q: embedder.encode([q]) for q in questions])
        del index
    return facts


def run_iterative_bench(
    config: IterativeBenchConfig,
    progress: Callable[[str], None] | None = None,
    pool: Any = None,
    chunks: Any = None,
    vectors: np.ndarray | None = None,
    embedder: Any = None,
    questions: Sequence[dict] | None = None,
) -> dict[str, Any]:
    """Run every (model, retriever, method, question); returns the JSON-ready result (``runs``,
    ``summaries``, ``collection``, ``retrievers``, ``models``, ``config``, ``environment``).
    ``pool``/``chunks``/``vectors``/``embedder``/``questions`` (``{"id", "question"}``) replace the
    defaults (tests pass small ones; the search probe then uses ``questions``)."""
    from specdraft import GenerationConfig, ModelConfig
    from specdraft.apps.model_pool import ModelPool
    from specdraft.retrieval.iterative import Collection, IterativeRAG, IterativeRAGConfig, make_retriever

    say = progress or (lambda message: print(f"specdraft: {message}", file=sys.stderr, flush=True))
    chunks = (chunks if chunks is not None else load_chunks(config.kb)).prefix(config.collection_size)
    embedder = embedder if embedder is not None else capped_embedder(config.embedding)
    needs_vectors = any(kind in ("dense", "hnsw") for kind in config.retrievers)
    if vectors is None and needs_vectors:
        vectors = kb_vectors(chunks.texts, embedder, config.embedding)
    collection = Collection(chunks.texts, chunks.ids)
    if questions is None:
        questions = kb_questions(config.limit, config.seed)
        probe = [q["question"] for q in kb_questions(config.probe_queries, config.seed)]
    else:
        questions = list(questions)[: config.limit]
        probe = [q["question"] for q in questions]

    retrievers: dict[str, Any] = {}
    retriever_facts: dict[str, dict[str, float]] = {}
    for kind in config.retrievers:
        say(f"building the {kind} retriever over {len(collection)} chunks ...")
        started = time.perf_counter()
        retrievers[kind] = make_retriever(kind, collection, embedder, vectors if kind != "bm25" else None)
        build_s = time.perf_counter() - started
        retriever_facts[kind] = {
            "build_s": round(build_s, 2),
            **probe_search(kind, retrievers[kind], probe, vectors, embedder),
        }
        say(f"{kind}: built in {build_s:.1f} s, {retriever_facts[kind]}")

    pool = pool or ModelPool(ModelConfig(device=config.device, dtype=config.dtype, backend=config.backend))
    rag_config = IterativeRAGConfig(
        stride=config.stride, query_tokens=config.query_tokens, max_new_tokens=config.max_new_tokens
    )
    generation = GenerationConfig(max_new_tokens=config.max_new_tokens)
    runs: list[Run] = []
    for model_name in config.models:
        target = pool.get(model_name)
        for kind in config.retrievers:

            def pipelines() -> dict[str, Any]:
                return {
                    method: IterativeRAG(
                        target, retrievers[kind], collection, rag_config, speculative=speculative_config(method, config)
                    )
                    for method in METHODS
                }

            # one pipeline per method across the questions, as an application keeps one: OS^3's estimates carry over
            rags = pipelines()
            for index, question in enumerate(questions):
                if config.scheduler_per_answer and index:
                    rags = pipelines()  # a fresh OS^3 scheduler for this answer
                reference: Run | None = None
                for method in METHODS:
                    run = answer_run(rags[method], question, generation, model_name, kind, method, reference)
                    reference = reference or run
                    runs.append(run)
                    say(
                        f"{model_name} {kind} q{index + 1}/{len(questions)} {method}: {run.wall_s:.2f} s, "
                        f"{run.tokens} tokens, retrieval {run.stats.get('retrieval_s', 0):.2f} s"
                        + ("" if run.identical else "  NOT IDENTICAL")
                    )
    models = {}
    for name in config.models:
        model = pool.get(name)
        models[name] = {
            **_decode_step(runs, name),
            "one_token_pass_s": probe_one_token_pass(model),
            "backend": model.backend,
        }
    return {
        "config": _config_dict(config),
        "collection": {
            "chunks": len(chunks),
            "by_source": chunks.counts(),
            "words": chunks.words(),
            "embedder": getattr(embedder, "name", str(embedder)),
            "max_seq_length": config.embedding.max_seq_length,
        },
        "retrievers": retriever_facts,
        "models": models,
        "summaries": summarize(runs),
        "runs": [asdict(run) for run in runs],
        "environment": _environment(),
    }


def _decode_step(runs: Sequence[Run], model: str) -> dict[str, float]:
    plain = [r for r in runs if r.model == model and r.method == "plain" and r.tokens]
    seconds = sum(r.stats.get("generation_s", 0.0) for r in plain)
    tokens = sum(r.tokens for r in plain)
    return {"decode_step_s": round(seconds / tokens, 5) if tokens else 0.0}


def probe_one_token_pass(model: Any, context: int = 128, passes: int = 16) -> float:
    """Median seconds of one one-token pass (a decoding step without re-prefills) after ``context``
    tokens, on a fresh session of ``model``."""
    session = model.new_session()
    try:
        tokens = [int(t) for t in model.encode("The tower was built for the world fair of 1889 in Paris. " * 16)][
            :context
        ]
        session.feed(tokens, all_logits=False)
        timings = []
        for token in tokens[:passes]:
            started = time.perf_counter()
            session.feed([token], all_logits=False)
            timings.append(time.perf_counter() - started)
        return round(statistics.median(timings), 5)
    finally:
        session.close()


def summarize(runs: Sequence[Run]) -> list[dict[str, Any]]:
    """One row per (model, retriever, method), in run order (module docstring)."""
    groups: dict[tuple[str, str, str], list[Run]] = {}
    for run in runs:
        groups.setdefault((run.model, run.retriever, run.method), []).append(run)
    rows = []
    for (model, kind, method), group in groups.items():
        plain = {r.question_id: r for r in groups.get((model, kind, "plain"), [])}
        paired = [r for r in group if r.question_id in plain]
        wall = sum(r.wall_s for r in group)
        plain_wall = sum(plain[r.question_id].wall_s for r in paired)
        own_wall = sum(r.wall_s for r in paired)
        stat = lambda key: sum(float(r.stats.get(key, 0) or 0) for r in group)  # noqa: E731
        speculated = stat("speculated_strides")
        carries_plain = any("plain_strides" in r.stats for r in group)
        rows.append(
            {
                "model": model,
                "retriever": kind,
                "method": method,
                "answers": len(group),
                "wall_s": round(wall, 3),
                "speedup": round(plain_wall / own_wall, 3) if own_wall else 0.0,
                "retrieval_share": round(stat("retrieval_s") / wall, 3) if wall else 0.0,
                "retrieval_s_per_answer": round(stat("retrieval_s") / len(group), 3),
                "generation_s_per_answer": round(stat("generation_s") / len(group), 3),
                "wait_share": round(stat("retrieval_wait_s") / wall, 3) if wall else 0.0,
                "strides_per_answer": round(stat("strides") / len(group), 2),
                "searched_queries_per_answer": round(stat("searched_queries") / len(group), 2),
                "cache_hit_rate": round(stat("cache_hits") / speculated, 3) if speculated else None,
                "rollbacks_per_answer": round(stat("rollbacks") / len(group), 2),
                "verifications_per_answer": round(stat("verifications") / len(group), 2),
                "strides": int(stat("strides")),
                "plain_strides": int(stat("plain_strides"))
                if carries_plain
                else None,  # OS^3's s = 0 strides (speculative methods)
                "tokens_per_answer": round(sum(r.tokens for r in group) / len(group), 1),
                "identical_rate": round(sum(r.identical for r in group) / len(group), 3),
            }
        )
    return rows


def _config_dict(config: IterativeBenchConfig) -> dict[str, Any]:
    data = asdict(config)
    data["methods"] = list(METHODS)
    return data


def _environment() -> dict[str, Any]:
    import os
    import platform

    import torch

    return {
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "cpus": os.cpu_count(),
        "processor": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "time": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }

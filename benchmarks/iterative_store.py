"""Speculative retrieval where a search costs what a real store's does: iterative RAG over a vector store
collection of a million records (issue 29, item 4).

The collection (``--store``, LanceDB by default: an exact flat scan, which is what a store without an
ANN index costs) holds the passages of the first ``--passages`` squad_shifts questions
(``kb_questions``), chunked and embedded with the capped MiniLM of ``specdraft bench iterative-rag``
(64-word chunks, 32 word pieces), and ``--distractors`` synthetic records: seeded random unit vectors
(embedding a million passages on two cores would take days) with a placeholder text. A random unit
vector's cosine with a query is about N(0, 1/sqrt(384)), so the passages still win the searches; every
search pays for the whole collection. The collection is built once into ``--path`` and reused.

For each of the first ``--questions`` questions, ``plain``, ``speculative`` and
``speculative+async+os3`` (``apps.bench.iterative_bench``'s methods, the same pipelines and
configuration) answer back to back; speed-up = plain's total wall / the method's. Answers must be
identical (token ids and the documents of every stride). Also measured: one search of one query
(median), split into the query's embedding and the store search. Writes ``results.json``,
``results.md`` and ``results.png`` into ``--out``. Take the timing lock::

    flock /tmp/specdraft-timing.lock .venv/bin/python benchmarks/iterative_store.py --out docs/bench/iterative-store
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from specdraft import GenerationConfig, ModelConfig
from specdraft.apps.bench.datasets.kb_corpus import kb_questions
from specdraft.apps.bench.datasets.kb_embeddings import EmbeddingCacheConfig, capped_embedder
from specdraft.apps.bench.iterative_bench import (
    METHODS,
    IterativeBenchConfig,
    Run,
    answer_run,
    speculative_config,
    summarize,
)
from specdraft.apps.bench.iterative_report import draw
from specdraft.apps.bench.result_files import write_results
from specdraft.apps.model_pool import ModelPool
from specdraft.retrieval import IndexConfig
from specdraft.retrieval.chunker import Chunk
from specdraft.retrieval.iterative import IterativeRAG, IterativeRAGConfig
from specdraft.retrieval.stores import CollectionNotFoundError, StoreConfig, build_store, open_store
from specdraft.retrieval.stores.registry import store_module

DISTRACTOR_BLOCK = 50_000  # distractor records generated and written at a time


def say(message: str) -> None:
    print(f"iterative_store: {message}", file=sys.stderr, flush=True)


def build_collection(config: StoreConfig, passages: list[dict], distractors: int, embedder: Any, seed: int) -> None:
    """The passages (built as ``specdraft index build --store`` builds), then the distractors."""
    started = time.perf_counter()
    store = build_store(config, passages, embedder, IndexConfig(chunk_words=64, chunk_overlap=8), overwrite=True)
    real, dim = len(store), store.backend.dim
    store.close()
    say(f"{real} passage chunks written in {time.perf_counter() - started:.1f} s; adding {distractors} distractors")
    backend = store_module(config.store).open_backend(config)
    rng = np.random.default_rng(seed)
    for start in range(0, distractors, DISTRACTOR_BLOCK):
        n = min(DISTRACTOR_BLOCK, distractors - start)
        vectors = rng.standard_normal((n, dim), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        rows = range(real + start, real + start + n)
        chunks = [Chunk(f"x{row}#0", f"x{row}", f"Unrelated record {row}.") for row in rows]
        backend.write(list(rows), chunks, vectors)
        say(f"  {start + n}/{distractors} distractors ({time.perf_counter() - started:.0f} s)")
    backend.close()


def median_s(calls: list) -> float:
    times = []
    for call in calls:
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", default="lancedb", choices=("lancedb", "qdrant", "milvus", "chroma"))
    parser.add_argument("--path", type=Path, default=Path.home() / ".cache/specdraft/iterative-store")
    parser.add_argument("--distractors", type=int, default=1_000_000)
    parser.add_argument("--passages", type=int, default=200, help="questions whose passages are in the collection")
    parser.add_argument("--questions", type=int, default=8)
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--backend", default="llama-cpp")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--rebuild", action="store_true", help="write the collection again")
    parser.add_argument("--out", type=Path, default=Path("docs/bench/iterative-store"))
    args = parser.parse_args(argv)

    bench = IterativeBenchConfig(models=(args.model,), max_new_tokens=args.max_new_tokens, limit=args.questions)
    where = args.path / args.store / ("store.db" if args.store == "milvus" else "")
    config = StoreConfig(args.store, path=str(where), collection=f"kb{args.distractors}")
    embedder = capped_embedder(EmbeddingCacheConfig())
    questions = kb_questions(max(args.passages, args.questions))
    try:
        if args.rebuild:
            raise CollectionNotFoundError("rebuild")
        store = open_store(config, embedder)
    except CollectionNotFoundError:
        passages = [{"id": q["id"], "text": q["passage"]} for q in questions[: args.passages]]
        build_collection(config, passages, args.distractors, embedder, seed=0)
        started = time.perf_counter()
        store = open_store(config, embedder)
        say(f"opened {len(store)} records in {time.perf_counter() - started:.1f} s")

    probe = [q["question"] for q in questions[: max(args.questions, 8)]]
    store.search(probe[:1], 1)  # warm-up
    prepared = store.prepare(probe)
    facts = {
        "records": len(store),
        "search_s": median_s([lambda q=q: store.search([q], 1) for q in probe]),
        "prepare_s": median_s([lambda q=q: store.prepare([q]) for q in probe]),
        "prepared_search_s": median_s([lambda p=p: store.search_prepared([p], 1) for p in prepared]),
    }
    say(f"one search: {facts}")

    pool = ModelPool(ModelConfig(backend=args.backend))
    target = pool.get(args.model)
    rag_config = IterativeRAGConfig(
        stride=bench.stride, query_tokens=bench.query_tokens, max_new_tokens=bench.max_new_tokens
    )
    generation = GenerationConfig(max_new_tokens=bench.max_new_tokens)
    rags = {
        method: IterativeRAG(target, store, store.collection, rag_config, speculative_config(method, bench))
        for method in METHODS
    }
    runs: list[Run] = []
    for index, question in enumerate(questions[: args.questions]):
        reference = None
        for method in METHODS:
            run = answer_run(rags[method], question, generation, args.model, args.store, method, reference)
            reference = reference or run
            runs.append(run)
            say(
                f"q{index + 1}/{args.questions} {method}: {run.wall_s:.2f} s, {run.tokens} tokens, retrieval "
                f"{run.stats.get('retrieval_s', 0):.2f} s" + ("" if run.identical else "  NOT IDENTICAL")
            )
    store.close()
    result = {
        "config": {**vars(args), "path": str(args.path), "out": str(args.out), "stride": bench.stride},
        "store": config.describe(),
        "retriever": facts,
        "summaries": summarize(runs),
        "runs": [asdict(run) for run in runs],
    }
    paths = write_results(args.out, result, markdown(result), partial(draw, result))
    say(f"wrote {', '.join(str(p) for p in paths.values())}")
    return 0


def markdown(result: dict[str, Any]) -> str:
    facts, config = result["retriever"], result["config"]
    lines = [
        "# Iterative RAG over a vector store of a million records: plain vs speculative retrieval",
        "",
        f"{result['store']}: {facts['records']:,} records ({config['passages']} questions' passages, chunked, and "
        f"{config['distractors']:,} synthetic distractors). {config['questions']} questions, {config['model']} on "
        f"{config['backend']}, up to {config['max_new_tokens']} new tokens, greedy, a retrieval every "
        f"{config['stride']} tokens.",
        "",
        f"One search of one query: {facts['search_s'] * 1000:.1f} ms (query embedding {facts['prepare_s'] * 1000:.1f} "
        f"ms, store search {facts['prepared_search_s'] * 1000:.1f} ms).",
        "",
        "| method | speed-up | time in retrieval | waiting for retrieval | cache hit rate | rollbacks / answer | "
        "wall s | identical |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in result["summaries"]:
        hit = "-" if row["cache_hit_rate"] is None else f"{row['cache_hit_rate']:.0%}"
        lines.append(
            f"| {row['method']} | {row['speedup']:.2f}x | {row['retrieval_share']:.0%} | {row['wait_share']:.0%} | "
            f"{hit} | {row['rollbacks_per_answer']} | {row['wall_s']} | {row['identical_rate']:.0%} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())

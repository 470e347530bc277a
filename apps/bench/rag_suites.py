"""Retrieval benchmarks: ``rag`` (real retrieval-augmented generation) and ``chat-multiturn``.

Both run plain decoding, the retrieval pipeline's drafters made by ``build_drafter`` afresh for
every case and run (``specdraft:reference``: LLMA over the case's **references**;
``specdraft:datastore``: REST over the ShareGPT datastore; ``specdraft:reference+datastore``;
``specdraft:prompt-lookup``), and transformers' prompt lookup (``--no-transformers`` drops it).

- ``rag``: the **passages** are the ``rag-reading`` pool (distinct squad_shifts passages, the first
  ``RAG_PASSAGE_CAP`` in archive order), indexed once in a flat FAISS ``DocumentIndex`` with the
  packaged all-MiniLM-L6-v2 and cached in ``data_cache_dir()/"rag-index-<key>"`` (the key hashes the
  passages, the embedder, the index configuration and ``RAG_INDEX_FORMAT``, so a changed pool
  rebuilds). The questions are those of ``rag_reading(limit, seed)`` (each one's passage is
  indexed). A case's prompt is ``RAGPipeline.prompt_ids(question, hits)`` for the ``--top-k`` hits;
  its references are the hits' texts and the question (``RAGPipeline.references``).
- ``chat-multiturn``: ``datasets.chat_multiturn`` conversations (reserved ShareGPT conversations
  ending in a later user turn). The prompt is the target's chat template over the messages (a
  ``User: ... Assistant:`` transcript for a model without one); the references are the turns' texts.

**Datastore** (both): ``sharegpt_datastore_texts()`` (ShareGPT answers less every reserved
conversation, see ``datasets``), the first ``--datastore-limit`` texts, tokenized with the target's
tokenizer and cached in ``data_cache_dir()/"datastore-sharegpt-<key>"`` (the key hashes the
tokenizer, the ShareGPT package version, the reserved rule and the limit).

**Retrieval facts** (``BenchResult.retrieval``): the datastore's texts, tokens, MB on disk, build or
load seconds, and ``Datastore.lookup`` times over each case's context tails (the prompt, and the
prompt followed by 1/4, 1/2 and 3/4 of plain's answer); for ``rag`` the index's passages, chunks,
build or load seconds, mean search time and how often a question's own passage was retrieved.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from specdraft import Drafter, Model
from specdraft.apps.model_pool import ModelPool
from specdraft.retrieval.datastore import Datastore, DatastoreDraftConfig
from specdraft.retrieval.datastore_build import build_datastore
from specdraft.retrieval.embedder import Embedder, TextEmbedder
from specdraft.retrieval.index import CorruptIndexError, DocumentIndex, IndexConfig, IndexNotFoundError
from specdraft.retrieval.pipeline import DRAFTERS, NO_DRAFTER, RAGConfig, RAGPipeline, build_drafter

from . import datasets
from .datasets import BenchPrompt
from .datasets.archive_cache import data_cache_dir, say
from .methods import BenchCase, Method, SpecdraftMethod, plain
from .suite import Suite, draft_model_methods, peers

RAG_PASSAGE_CAP = 3000
RAG_INDEX_FORMAT = 1  # bump when passages are turned into documents differently
DATASTORE_FORMAT = 1  # bump when the datastore corpus changes
RETRIEVAL_DRAFTERS = tuple(kind for kind in DRAFTERS if kind != NO_DRAFTER)  # prompt-lookup, reference, datastore, ...
ANSWER_POSITIONS = 4  # lookup contexts per case: the prompt, then + i/4 of plain's answer (i = 1..3)


# --------------------------------------------------------------------------------------------
# Suites


def rag_suite(args: argparse.Namespace, pool: ModelPool, target: Model, embedder: TextEmbedder | None = None) -> Suite:
    """The ``rag`` benchmark (module docstring); ``embedder`` defaults to the packaged MiniLM."""
    config = RAGConfig(top_k=args.top_k, max_new_tokens=args.max_new_tokens)
    passages = datasets.rag_passages()[:RAG_PASSAGE_CAP]
    indexed = {passage["id"] for passage in passages}
    questions = [record for record in datasets.rag_questions(args.seed) if record["id"] in indexed]
    if not 0 <= args.limit <= len(questions):
        raise ValueError(f"limit must be between 0 and {len(questions)} for 'rag', got {args.limit}")
    index, index_facts = cached_index(passages, embedder or Embedder())
    cases, search_facts = rag_cases(RAGPipeline(index, target, NO_DRAFTER, None, config), questions[: args.limit])
    datastore, datastore_facts = cached_sharegpt_datastore(target, args.datastore_limit)
    facts = {"index": {**index_facts, **search_facts}, "datastore": datastore_facts}
    return _retrieval_suite(args, pool, target, cases, datastore, config, facts)


def chat_multiturn_suite(args: argparse.Namespace, pool: ModelPool, target: Model) -> Suite:
    """The ``chat-multiturn`` benchmark (module docstring)."""
    config = RAGConfig(max_new_tokens=args.max_new_tokens)
    cases = [
        chat_case(target, prompt, args.max_new_tokens) for prompt in datasets.chat_multiturn(args.limit, args.seed)
    ]
    datastore, datastore_facts = cached_sharegpt_datastore(target, args.datastore_limit)
    return _retrieval_suite(args, pool, target, cases, datastore, config, {"datastore": datastore_facts})


def _retrieval_suite(
    args: argparse.Namespace,
    pool: ModelPool,
    target: Model,
    cases: list[BenchCase],
    datastore: Datastore,
    config: RAGConfig,
    facts: dict,
) -> Suite:
    """The methods over ``cases``; ``retrieval`` adds lookup timings to ``facts["datastore"]``."""
    methods = retrieval_methods(target, datastore, config) + draft_model_methods(args, pool, target)

    def retrieval(outputs: dict[str, list[int]]) -> dict:
        lookups = lookup_timings(datastore, cases, outputs, config.datastore)
        return {**facts, "datastore": {**facts["datastore"], "lookup": lookups}}

    return Suite(methods + peers(args, pool, target), cases, retrieval=retrieval)


def retrieval_methods(target: Model, datastore: Datastore, config: RAGConfig) -> list[Method]:
    """Plain decoding, then ``specdraft:<kind>`` for each of ``RETRIEVAL_DRAFTERS``, drafting from the
    case's references and ``datastore`` as ``RAGPipeline`` does."""

    def drafter_maker(kind: str) -> Callable[[BenchCase], Drafter | None]:
        return lambda case: build_drafter(kind, target.tokenizer, case.references, datastore, config)

    return [plain(target)] + [
        SpecdraftMethod(f"specdraft:{kind}", target, drafter_maker(kind), config.speculation)
        for kind in RETRIEVAL_DRAFTERS
    ]


# --------------------------------------------------------------------------------------------
# Cases


def rag_cases(pipeline: RAGPipeline, questions: Sequence[dict]) -> tuple[list[BenchCase], dict]:
    """One case per ``{"id", "question"}`` record: the pipeline's prompt over its top-k hits, which are
    the references. Facts: ``top_k``, ``search_mean_ms`` (after one untimed search that loads the
    embedder) and ``own_passage_retrieved`` (the share of questions whose record id is a hit's
    document)."""
    top_k = pipeline.config.top_k
    if questions:
        pipeline.index.search(questions[0]["question"], top_k)  # warm-up
    cases, seconds, found = [], [], 0
    for record in questions:
        start = time.perf_counter()
        hits = pipeline.index.search(record["question"], top_k)
        seconds.append(time.perf_counter() - start)
        found += any(hit.chunk.doc_id == record["id"] for hit in hits)
        prompt_ids = pipeline.prompt_ids(record["question"], hits)
        references = tuple(pipeline.references(record["question"], hits))
        cases.append(BenchCase(record["id"], tuple(prompt_ids), pipeline.config.max_new_tokens, references=references))
    facts = {
        "top_k": top_k,
        "search_mean_ms": round(1e3 * float(np.mean(seconds)), 3) if seconds else None,
        "own_passage_retrieved": round(found / len(questions), 4) if questions else None,
    }
    return cases, facts


def chat_prompt_ids(target: Model, messages: Sequence[dict]) -> list[int]:
    """``messages`` in the target's chat template, ready for the answer; without a template, a
    ``"User: ...\\n\\nAssistant: ...\\n\\n"`` transcript ending in ``"Assistant:"``."""
    if target.has_chat_template:
        return target.encode_chat(messages)
    transcript = "".join(f"{m['role'].capitalize()}: {m['content']}\n\n" for m in messages)
    return target.encode(f"{transcript}Assistant:")


def chat_case(target: Model, prompt: BenchPrompt, max_new_tokens: int) -> BenchCase:
    """A conversation ending in a user turn; the references are its turns' texts."""
    references = tuple(message["content"] for message in prompt.messages)
    return BenchCase(prompt.id, tuple(chat_prompt_ids(target, prompt.messages)), max_new_tokens, references=references)


# --------------------------------------------------------------------------------------------
# Cached index and datastore


def cached_index(
    passages: Sequence[dict], embedder: TextEmbedder, config: IndexConfig = IndexConfig()
) -> tuple[DocumentIndex, dict]:
    """The index of ``passages`` (``{"id", "text"}`` records), loaded from its cache folder or built
    (with a progress bar) and saved there. Facts: folder, embedder, kind, passages, chunks,
    ``built`` and the build or load ``seconds``."""
    documents = [{"id": passage["id"], "text": passage["text"]} for passage in passages]
    key = _digest(
        {"format": RAG_INDEX_FORMAT, "embedder": embedder.name, "config": config.persisted(), "documents": documents}
    )
    folder = data_cache_dir() / f"rag-index-{key}"
    start = time.perf_counter()
    try:
        index, built = DocumentIndex.load(folder, embedder, use_gpu=config.use_gpu), False
    except (IndexNotFoundError, CorruptIndexError):
        say(f"embedding {len(documents)} passages into {folder} (once; slow on a CPU) ...")
        index, built = DocumentIndex.create(config, embedder), True
        index.add(documents, progress=True)
        index.save(folder)
    seconds = time.perf_counter() - start
    facts = {
        "folder": str(folder),
        "embedder": embedder.name,
        "kind": index.kind,
        "passages": index.documents,
        "chunks": len(index),
    }
    return index, {**facts, "built": built, "seconds": round(seconds, 3)}


def cached_sharegpt_datastore(target: Model, limit: int | None) -> tuple[Datastore, dict]:
    """The REST datastore of ``sharegpt_datastore_texts()`` (the first ``limit`` texts; all for None)
    in the target's tokenizer, loaded from its cache folder or built and saved there (then opened
    from disk, memory-mapped, either way). Facts: corpus, folder, texts, tokens, ``disk_mb``,
    ``built`` and the build or load ``seconds``."""
    if limit is not None and limit < 1:
        raise ValueError(f"--datastore-limit must be >= 1, got {limit}")
    corpus = {"package": datasets.SHAREGPT, "reserved": datasets.RESERVED_RULE, "limit": limit}
    key = _digest({"format": DATASTORE_FORMAT, "tokenizer": target.tokenizer.fingerprint(), "corpus": corpus})
    folder = data_cache_dir() / f"datastore-sharegpt-{key}"
    start = time.perf_counter()
    try:
        datastore, built = Datastore.load(folder), False
    except ValueError:
        say(f"building the ShareGPT datastore for {target.name}'s tokenizer in {folder} (once) ...")
        build_datastore(datasets.sharegpt_datastore_texts(), target.tokenizer, target.name, limit).save(folder)
        datastore, built = Datastore.load(folder), True
    seconds = time.perf_counter() - start
    facts = {
        "corpus": f"ShareGPT assistant answers without reserved conversations ({datasets.RESERVED_RULE})",
        "folder": str(folder),
        "texts": datastore.num_sequences,
        "tokens": datastore.num_tokens,
        "disk_mb": round(sum(path.stat().st_size for path in Path(folder).iterdir()) / 1e6, 1),
    }
    return datastore, {**facts, "built": built, "seconds": round(seconds, 3)}


def lookup_timings(
    datastore: Datastore, cases: Sequence[BenchCase], outputs: dict[str, list[int]], config: DatastoreDraftConfig
) -> dict:
    """``Datastore.lookup`` over each case's context tails (module docstring), as the datastore drafter
    calls it: ``contexts``, ``mean_ms``, ``p95_ms``, ``mean_suffix_tokens`` (the matched suffix) and
    ``hit_rate`` (the share of contexts with a match)."""
    seconds, suffixes = [], []
    for case in cases:
        answer = outputs.get(case.id, [])
        for position in range(ANSWER_POSITIONS):
            context = list(case.prompt_ids) + answer[: len(answer) * position // ANSWER_POSITIONS]
            start = time.perf_counter()
            found = datastore.lookup(
                context[-config.max_suffix :],
                config.max_suffix,
                config.min_suffix,
                config.max_candidates,
                config.continuation_len,
            )
            seconds.append(time.perf_counter() - start)
            suffixes.append(found.suffix_len)
    if not seconds:
        return {"contexts": 0}
    ms = 1e3 * np.asarray(seconds)
    return {
        "contexts": len(seconds),
        "mean_ms": round(float(ms.mean()), 4),
        "p95_ms": round(float(np.percentile(ms, 95)), 4),
        "mean_suffix_tokens": round(float(np.mean(suffixes)), 2),
        "hit_rate": round(float(np.mean(np.asarray(suffixes) > 0)), 4),
    }


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()[:16]

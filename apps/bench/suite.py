"""What every benchmark suite is made of: the ``Suite`` and the method lists that the prompt, grammar
and retrieval suites share (a draft model, the peers, the same methods on another backend).
``suites`` builds the suites by name; ``rag_suites`` builds the retrieval ones."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Callable

from specdraft import Model
from specdraft.apps.model_pool import ModelPool
from specdraft.retrieval.drafter_registry import parse_drafter

from .methods import (
    BenchCase,
    Method,
    SpecdraftMethod,
    specdraft_by_spec,
    transformers_assisted,
    transformers_prompt_lookup,
)


@dataclass
class Suite:
    """What a benchmark runs. ``methods[0]`` is plain decoding. ``quality`` and ``retrieval`` map
    plain's outputs (case id -> token ids) to the result's ``quality`` and ``retrieval`` facts."""

    methods: list[Method]
    cases: list[BenchCase]
    quality: Callable[[dict[str, list[int]]], dict] = field(default=lambda outputs: {})
    retrieval: Callable[[dict[str, list[int]]], dict] = field(default=lambda outputs: {})


def draft_model_methods(args: argparse.Namespace, pool: ModelPool, target: Model) -> list[Method]:
    """specdraft's draft-model drafter for ``--draft-model`` (none without it)."""
    if not args.draft_model:
        return []
    return [specdraft_by_spec(pool, target, parse_drafter(f"model:{args.draft_model}", args.tree_width))]


def peers(args: argparse.Namespace, pool: ModelPool, target: Model) -> list[Method]:
    """What a user of the target's backend would otherwise run (none with ``--no-peers``):
    transformers' prompt lookup, and assisted generation with ``--draft-model``; on llama.cpp,
    llama-cpp-python's plain generation and its ``LlamaPromptLookupDecoding`` (on the installed build),
    and with ``--stock-llama-lib`` its plain generation on that (unpatched) build too."""
    if args.no_peers:
        return []
    if target.backend == "llama-cpp":
        from .llama_peers import LlamaCppPeer

        path, context, threads = target.file.path, target.max_length, target.threads
        found_llama: list[Method] = [
            LlamaCppPeer("llama-cpp-python:plain", path, context, threads),
            LlamaCppPeer("llama-cpp-python:prompt-lookup", path, context, threads, prompt_lookup=10),
        ]
        if args.stock_llama_lib:  # declared by the bench parser, like no_peers
            from .llama_build_peer import STOCK_PEERS, OtherBuildPeer

            found_llama.append(OtherBuildPeer(STOCK_PEERS["plain"], args.stock_llama_lib, path, context, threads))
        return found_llama
    found: list[Method] = [transformers_prompt_lookup(target)]
    if args.draft_model:
        found.append(transformers_assisted(target, pool.get(args.draft_model), args.draft_model))
    return found


def alongside_methods(methods: list[Method], other: Model) -> list[Method]:
    """Plain decoding and the first specdraft method of ``methods`` again, on ``other`` (the same
    model on another backend), named ``<backend>:plain`` and ``<backend>:<method>``."""
    specdraft = [m for m in methods if isinstance(m, SpecdraftMethod)][:2]
    return [SpecdraftMethod(f"{other.backend}:{m.name}", other, m.make_drafter, m.speculation) for m in specdraft]

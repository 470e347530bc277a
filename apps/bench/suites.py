"""Benchmark suites: which cases and which methods a named benchmark runs.

- Prompt sets (``chat-summarization``, ``summarization``, ``chat``, ``rag-reading``): chat prompts
  from real text; plain decoding vs. specdraft's prompt lookup (and draft model) vs. transformers'
  prompt lookup (and assisted generation).
- Grammar sets (``grammar-sentences``, ``grammar-paragraphs``): the grammar corrector's prompts over
  sentences with injected errors; plain vs. copydraft vs. prompt lookup (specdraft's and
  transformers'); quality is the ERRANT F0.5 of the (identical) corrected outputs.
- Retrieval sets (``rag``, ``chat-multiturn``): real retrieval-augmented generation and multi-turn
  chat; plain vs. the retrieval pipeline's drafters (reference, datastore, both, prompt lookup) vs.
  transformers' prompt lookup, with the datastore's and the index's sizes and timings
  (``rag_suites``).

``build`` and ``names`` dispatch by name. The ``Suite`` and the method lists every suite shares live
in ``suite`` (re-exported here), which ``rag_suites`` imports too: only ``build`` imports ``rag_suites``.
"""

from __future__ import annotations

import argparse

from specdraft import Model
from specdraft.apps.model_pool import ModelPool
from specdraft.retrieval.drafter_registry import parse_drafter

from .methods import BenchCase, Method, SpecdraftMethod, plain, specdraft_by_spec
from .suite import Suite, alongside_methods, draft_model_methods, peers
from .suite_names import RETRIEVAL_SETS, names

__all__ = [
    "RETRIEVAL_SETS",
    "Suite",
    "alongside_methods",
    "build",
    "draft_model_methods",
    "grammar_suite",
    "names",
    "peers",
    "prompt_suite",
]


def build(args: argparse.Namespace, pool: ModelPool, target: Model) -> Suite:
    from .datasets.grammar_data import GRAMMAR_SETS

    if args.benchmark in GRAMMAR_SETS:
        return grammar_suite(args, pool, target)
    if args.benchmark in RETRIEVAL_SETS:
        from .rag_suites import chat_multiturn_suite, rag_suite

        return rag_suite(args, pool, target) if args.benchmark == "rag" else chat_multiturn_suite(args, pool, target)
    return prompt_suite(args, pool, target)


def prompt_suite(args: argparse.Namespace, pool: ModelPool, target: Model) -> Suite:
    from .datasets import load_prompt_set

    cases = []
    for prompt in load_prompt_set(args.benchmark, limit=args.limit, seed=args.seed):
        ids = (
            target.encode_chat(prompt.messages)
            if target.has_chat_template
            else target.encode(prompt.messages[-1]["content"])
        )
        cases.append(BenchCase(prompt.id, tuple(ids), args.max_new_tokens))
    methods: list[Method] = [plain(target), specdraft_by_spec(pool, target, parse_drafter("prompt-lookup"))]
    methods += draft_model_methods(args, pool, target)
    return Suite(methods + peers(args, pool, target), cases)


def grammar_suite(args: argparse.Namespace, pool: ModelPool, target: Model) -> Suite:
    from specdraft.copydraft.corrector import INSTRUCTION
    from specdraft.copydraft.editor import Editor

    from .datasets.grammar_data import GRAMMAR_SETS

    editor = Editor(target)
    items = GRAMMAR_SETS[args.benchmark](limit=args.limit, seed=args.seed)
    cases = []
    for item in items:
        prompt_ids, source_ids, max_new = editor.prepare(INSTRUCTION, item.source)
        cases.append(BenchCase(item.id, tuple(prompt_ids), max_new, tuple(source_ids)))
    copy = SpecdraftMethod(
        "specdraft:copydraft", target, lambda case: editor.drafter(list(case.source_ids)), editor.config.speculation
    )
    methods: list[Method] = [plain(target), copy, specdraft_by_spec(pool, target, parse_drafter("prompt-lookup"))]

    def quality(outputs: dict[str, list[int]]) -> dict:
        from .errant_score import score

        by_id = {item.id: item for item in items}
        ids = list(outputs)
        hypotheses = [target.decode(outputs[i]).strip() for i in ids]
        return {"errant": score([by_id[i].source for i in ids], hypotheses, [by_id[i].reference for i in ids])}

    return Suite(methods + peers(args, pool, target), cases, quality)

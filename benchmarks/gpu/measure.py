"""The GPU run's measurements with trained weights (``scripts/gpu_run.py``, call 2).

One target, loaded once from the GGUF file in float32, runs on two **paths**: ``eager`` (the
transformers backend, ``TransformersModel``: a growing ``DynamicCache``) and ``fast`` (the fast
path, ``FastPathModel``: static KV and, on CUDA, graph-captured verify passes) over the same
weights. ``transformers`` is transformers' own ``generate`` on those weights (the peer).

- ``pass_cost``: the cost of one verify pass by width on both paths (``session_pass_ms`` of the
  benchmark runner), with the largest logit difference between them.
- ``tasks``: grammar correction, RAG and multi-turn chat over the fixed prompts of
  ``benchmarks.gpu.prompts``, plus a draft-model task (exactness only: the drafter is the same
  model in bfloat16, right most of the time but not always). Each task runs the benchmark runner
  (``run_benchmark``): every method on every case, same stop rule, one warm-up. Method names are
  ``<path>:<drafter>``; ``<path>:plain`` is the path's plain decoding.
- ``exactness``: per method, the share of cases whose tokens equal plain decoding's on the same
  path and transformers' ``generate``'s. Lossless means both are 1 for every specdraft method.

Everything runs on any device; ``Budget`` says how much (``FULL`` on the GPU, ``TINY`` in the CPU
rehearsal).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch

from specdraft import Drafter, SpeculationConfig, TransformersModel
from specdraft.apps.bench.methods import (
    BenchCase,
    Method,
    SpecdraftMethod,
    transformers_plain,
    transformers_prompt_lookup,
)
from specdraft.apps.bench.runner import BenchResult, run_benchmark
from specdraft.backends.fast_path import FastPathModel

from .prompts import CONVERSATIONS, RAG_ITEMS, grammar_sources

PLAIN = "plain"
PATHS = ("eager", "fast")
PEER = "transformers"  # transformers' own generate: the path of the peers


@dataclass(frozen=True)
class Budget:
    """How much each measurement does. ``cases``: prompts per task; ``new_tokens``: the RAG and chat
    answers' limit; ``grammar_tokens``: the corrections' limit (the editor's own when smaller);
    ``draft_cases``/``draft_tokens``: the draft-model task's; ``context``/``widths``/``reps``/
    ``warmup``: the pass-cost sweep's; ``tree_tokens``: the fast path's tree check; ``draft_dtype``:
    the draft model's (bfloat16: a drafter that is right most of the time but not always; a CPU
    computes it slowly, so the rehearsal drafts in float32, always right); ``task_warm_up``: the
    runner's untimed warm-up run of each method before a task (the rehearsal's times mean nothing)."""

    cases: int
    new_tokens: int
    grammar_tokens: int
    draft_cases: int
    draft_tokens: int
    context: int
    widths: tuple[int, ...]
    reps: int
    warmup: int
    tree_tokens: int
    draft_dtype: str
    task_warm_up: bool = True


FULL = Budget(
    cases=4,
    new_tokens=128,
    grammar_tokens=192,
    draft_cases=2,
    draft_tokens=64,
    context=512,
    widths=(1, 2, 4, 8, 16, 32, 64),
    reps=20,
    warmup=3,
    tree_tokens=64,
    draft_dtype="bfloat16",
)
TINY = Budget(
    cases=1,
    new_tokens=6,
    grammar_tokens=6,
    draft_cases=1,
    draft_tokens=4,
    context=24,
    widths=(1, 4, 16),
    reps=2,
    warmup=1,
    tree_tokens=6,
    draft_dtype="float32",
    task_warm_up=False,
)


def load_gguf(path: Path, device: str, name: str, sha256: str | None = None) -> tuple[TransformersModel, str]:
    """The model and tokenizer of GGUF file ``path``, dequantized to float32 by transformers (which
    reads the file with ``gguf``), on ``device``; and where they came from. When ``path`` is registry
    model ``name``'s file (``sha256`` matches the registry) and this machine already holds its
    converted checkpoint (``specdraft.models``: the same transformers conversion, saved once), that is
    loaded instead ("cached checkpoint"): on a fresh device machine there is none, and the GGUF is
    read ("gguf"); a CPU rehearsal skips the half-minute tokenizer conversion it has done before."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from specdraft.models import REGISTRY, cached_checkpoint

    cached = cached_checkpoint(name) if name in REGISTRY and REGISTRY[name].sha256 == sha256 else None
    if cached is not None:
        folder, kwargs, source = str(cached), {}, "cached checkpoint"
    else:
        folder, kwargs, source = str(path.parent), {"gguf_file": path.name}, "gguf"
    tokenizer = AutoTokenizer.from_pretrained(folder, **kwargs)
    hf_model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, **kwargs)
    return TransformersModel(hf_model.to(device), tokenizer, name=name), source


def pass_cost(eager: TransformersModel, fast: FastPathModel, budget: Budget) -> dict:
    """Median ms of a verify pass over w new tokens after ``budget.context`` tokens, on both paths,
    and how far their last logits rows differ (the fast path pads to buckets; float32 rounding)."""
    from benchmarks.pass_cost import session_pass_ms

    eager_rows: dict[int, torch.Tensor] = {}
    fast_rows: dict[int, torch.Tensor] = {}
    eager_ms = session_pass_ms(eager, budget.context, budget.widths, budget.reps, budget.warmup, eager_rows)
    fast_ms = session_pass_ms(fast, budget.context, budget.widths, budget.reps, budget.warmup, fast_rows)
    return {
        "context": budget.context,
        "reps": budget.reps,
        "fast_graphs": fast.uses_graphs,
        "eager_ms": eager_ms,
        "fast_ms": fast_ms,
        "eager_over_fast": {w: round(eager_ms[w] / fast_ms[w], 2) for w in budget.widths},
        "max_abs_logit_diff": {w: float((eager_rows[w] - fast_rows[w]).abs().max()) for w in budget.widths},
        "same_argmax": all(torch.equal(eager_rows[w].argmax(-1), fast_rows[w].argmax(-1)) for w in budget.widths),
    }


def fast_trees(eager: TransformersModel, fast: FastPathModel, budget: Budget) -> dict:
    """The fast path decoding ``budget.tree_tokens`` tokens after a random ``budget.context``-token
    prompt plainly and with reference trees of every width, against the eager path's plain tokens
    (``benchmarks.pass_cost.lossless``)."""
    from benchmarks.pass_cost import lossless

    return lossless(eager, fast, budget.context, budget.tree_tokens)


# --------------------------------------------------------------------------------------------
# Tasks: cases and the drafters to compare on them


DrafterMaker = Callable[[BenchCase], Drafter | None]


@dataclass
class Task:
    """Cases and named drafters (each with its speculation settings) to run on both paths; ``peer``:
    whether transformers' prompt lookup runs too (its plain ``generate`` always does)."""

    name: str
    cases: list[BenchCase]
    drafters: dict[str, tuple[DrafterMaker, SpeculationConfig]]
    peer: bool = True


def grammar_task(target: TransformersModel, budget: Budget) -> Task:
    """The grammar corrector's prompts over ``prompts.grammar_sources``; copydraft drafts the source
    (as ``specdraft bench grammar-*`` does) and prompt lookup is its general rival."""
    from specdraft.copydraft.corrector import INSTRUCTION
    from specdraft.copydraft.editor import Editor
    from specdraft.drafters import PromptLookupDrafter

    editor = Editor(target)
    cases = []
    for case_id, source in grammar_sources(budget.cases):
        prompt_ids, source_ids, max_new = editor.prepare(INSTRUCTION, source)
        cases.append(BenchCase(case_id, tuple(prompt_ids), min(max_new, budget.grammar_tokens), tuple(source_ids)))
    drafters = {
        "copydraft": (lambda case: editor.drafter(list(case.source_ids)), editor.config.speculation),
        "prompt-lookup": (lambda case: PromptLookupDrafter(), SpeculationConfig()),
    }
    return Task("grammar", cases, drafters)


class FixedIndex:
    """What ``RAGPipeline.prompt_ids`` and ``rag_cases`` use of a ``DocumentIndex``, its ``search``,
    answering each question with its own passages in their fixed order (the first is its document
    ``<id>``): a real index needs FAISS and an embedding model, which the GPU machine lacks."""

    def __init__(self, items: list[tuple[str, dict]]) -> None:
        self.items = {item["question"]: (item_id, item["passages"]) for item_id, item in items}

    def search(self, question: str, top_k: int) -> list:
        from specdraft.retrieval.index import Chunk, Hit

        item_id, passages = self.items[question]
        doc_ids = [item_id] + [f"{item_id}-other-{j}" for j in range(1, len(passages))]
        return [
            Hit(j, Chunk(f"{doc}#0", doc, text), 1.0 - 0.1 * j) for j, (doc, text) in enumerate(zip(doc_ids, passages))
        ][:top_k]


def _retrieval_drafters(target: TransformersModel, config) -> dict[str, tuple[DrafterMaker, SpeculationConfig]]:
    """The RAG pipeline's reference and prompt-lookup drafters over a case's references (as
    ``specdraft bench rag`` builds them)."""
    from specdraft.retrieval.pipeline import build_drafter

    def maker(kind: str) -> DrafterMaker:
        return lambda case: build_drafter(kind, target.tokenizer, case.references, None, config)

    return {kind: (maker(kind), config.speculation) for kind in ("reference", "prompt-lookup")}


def rag_task(target: TransformersModel, budget: Budget) -> Task:
    """``RAGPipeline``'s prompts over ``prompts.RAG_ITEMS`` (top 3 passages, answer's first)."""
    from specdraft.apps.bench.rag_suites import rag_cases
    from specdraft.retrieval.pipeline import NO_DRAFTER, RAGConfig, RAGPipeline

    config = RAGConfig(max_new_tokens=budget.new_tokens)
    items = [(f"rag-{i}", item) for i, item in enumerate(RAG_ITEMS[: budget.cases])]
    pipeline = RAGPipeline(FixedIndex(items), target, NO_DRAFTER, None, config)
    cases, _ = rag_cases(pipeline, [{"id": item_id, "question": item["question"]} for item_id, item in items])
    return Task("rag", cases, _retrieval_drafters(target, config))


def chat_task(target: TransformersModel, budget: Budget) -> Task:
    """``prompts.CONVERSATIONS`` in the chat template (``specdraft bench chat-multiturn``'s cases);
    the reference drafter drafts from every turn, ``documents`` from the non-assistant ones (what a
    client's prompt passages give it)."""
    from specdraft.apps.bench.datasets import BenchPrompt
    from specdraft.apps.bench.rag_suites import chat_case
    from specdraft.retrieval.pipeline import RAGConfig
    from specdraft.retrieval.prompt_passages import documents_drafter, prompt_texts

    config = RAGConfig(max_new_tokens=budget.new_tokens)
    cases, texts = [], {}
    for i, turns in enumerate(CONVERSATIONS[: budget.cases]):
        case = chat_case(target, BenchPrompt(f"chat-{i}", turns, "", "chat-multiturn"), budget.new_tokens)
        cases.append(case)
        texts[case.prompt_ids] = prompt_texts(None, turns)  # by prompt: the runner's warm-up renames a case
    drafters = _retrieval_drafters(target, config)
    drafters["documents"] = (
        lambda case: documents_drafter(target.tokenizer, texts[case.prompt_ids]),
        config.speculation,
    )
    return Task("chat", cases, drafters)


def draft_model_task(target: TransformersModel, chat: Task, budget: Budget) -> Task:
    """The first ``budget.draft_cases`` chat cases with a draft model: the target's own weights in
    ``budget.draft_dtype``, for exactness; not a speed-up (it is as large as the target)."""
    import copy

    from specdraft import ModelConfig
    from specdraft.backends.transformers.model import resolved_dtype
    from specdraft.drafters import DraftModelDrafter

    dtype = resolved_dtype(ModelConfig(dtype=budget.draft_dtype))
    draft = TransformersModel(
        copy.deepcopy(target.hf_model).to(dtype), target.hf_tokenizer, name=f"{target.name}-{budget.draft_dtype}"
    )
    cases = [BenchCase(case.id, case.prompt_ids, budget.draft_tokens) for case in chat.cases[: budget.draft_cases]]
    drafter = (lambda case: DraftModelDrafter(draft, target.vocab_size), SpeculationConfig())
    return Task("draft-model", cases, {f"draft-model-{budget.draft_dtype}": drafter}, peer=False)


def methods(task: Task, eager: TransformersModel, fast: FastPathModel | None) -> list[Method]:
    """``eager:plain`` first (the runner's baseline), the task's drafters on both paths (the eager
    one only without ``fast``), then transformers' ``generate``: plain and, for a task with
    ``peer``, with prompt lookup."""
    found: list[Method] = []
    for path, model in zip(PATHS, (eager, fast)):
        if model is None:
            continue
        found.append(SpecdraftMethod(f"{path}:{PLAIN}", model, lambda case: None))
        found += [SpecdraftMethod(f"{path}:{name}", model, make, spec) for name, (make, spec) in task.drafters.items()]
    peers = [transformers_plain(eager)] + ([transformers_prompt_lookup(eager)] if task.peer else [])
    return found + peers


def path_of(method: str) -> str:
    return method.split(":", 1)[0]


def exactness(result: BenchResult) -> dict:
    """Per method: ``same_path`` (share of cases identical to ``<path>:plain``) and ``generate``
    (share identical to transformers' plain ``generate``); ``lossless``: both are 1 for every
    specdraft method (the peer's own prompt lookup is reported, not judged)."""
    plain = {
        (path_of(m.method), m.prompt_id): m.token_ids for m in result.measurements if m.method.endswith(f":{PLAIN}")
    }
    rows: dict[str, dict] = {}
    for m in result.measurements:
        row = rows.setdefault(m.method, {"cases": 0, "same_path": 0, "generate": 0})
        row["cases"] += 1
        row["same_path"] += m.token_ids == plain[(path_of(m.method), m.prompt_id)]
        row["generate"] += m.token_ids == plain[(PEER, m.prompt_id)]
    for row in rows.values():
        row["same_path"] = row["same_path"] / row["cases"]
        row["generate"] = row["generate"] / row["cases"]
    lossless = all(
        row["same_path"] == 1 and row["generate"] == 1 for method, row in rows.items() if path_of(method) in PATHS
    )
    return {"methods": rows, "lossless": lossless}


def speedups(result: BenchResult) -> list[dict]:
    """Per method: wall-time speed-up over plain decoding on its own path, over the eager path's
    plain decoding, and over transformers' prompt lookup (None in a task without it); the decode
    phase's speed-up over eager plain; target passes per token; mean accepted tokens per step."""
    by_name = {summary.method: summary for summary in result.summaries}
    peer = by_name.get(f"{PEER}:prompt-lookup")
    rows = []
    for s in result.summaries:
        base = by_name[f"{path_of(s.method)}:{PLAIN}"]
        rows.append(
            {
                "method": s.method,
                "wall_s": s.wall_s,
                "tokens_per_s": s.tokens_per_s,
                "vs_plain_same_path": round(base.wall_s / s.wall_s, 3) if s.wall_s else 0.0,
                "vs_eager_plain": s.speedup,
                "vs_transformers_prompt_lookup": round(peer.wall_s / s.wall_s, 3) if peer and s.wall_s else None,
                "decode_vs_eager_plain": s.decode_speedup,
                "passes_per_token": s.forward_passes_per_token,
                "mean_accepted": s.mean_accepted_tokens,
            }
        )
    return rows


def run_task(
    task: Task, eager: TransformersModel, fast: FastPathModel | None, warm_up: bool = True
) -> tuple[BenchResult, dict]:
    """The runner over the task's methods (``warm_up``: the runner's); returns its result and
    ``{"speedups", "exactness", "cases"}``."""
    result = run_benchmark(task.name, eager.name, methods(task, eager, fast), task.cases, warm_up)
    return result, {"cases": len(task.cases), "speedups": speedups(result), "exactness": exactness(result)}

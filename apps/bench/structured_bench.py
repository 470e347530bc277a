"""``specdraft bench structured``: structured outputs and tool calls, speculative and exact, measured.

Setting (``StructuredBenchConfig``): the ``limit`` documents of each task of
``datasets.structured_data`` (``extract``: a record of the people, organisations, places, dates and
amounts a BBC article names, under a JSON schema; ``tool-call``: a named ``save_people`` call whose
arguments come from a New York Times passage, the tools in the prompt), encoded with the target's
``encode_chat`` (``tools=`` for the tool set), greedy, up to ``max_new_tokens`` each.

Methods (``structured_methods.METHODS``, one run, same model and prompts), all under the case's
constraint: ``constrained`` (plain constrained decoding: no drafter, ``grammar_drafts=False``; the
baseline), ``specdraft:grammar`` (the grammar's forced tokens drafted), ``+prompt-lookup`` and
``+documents`` (the service's documents drafter over the prompt's texts); on the llama.cpp backend
also llama-cpp-python's own schema-constrained chat completion on the same GGUF
(``structured_peer``; ``peers=False`` leaves it out).

For each case the methods run back to back, plain first; each method has one untimed warm-up
(``warm_up=False`` leaves it out where the times are not read, as in the test suite).
``identical``: a specdraft method's token ids ``==`` plain constrained decoding's. The peer's grammar
is not ours, so it is never counted as identical (``identical`` None); ``text_equal`` /
``same_record`` say whether its answer is ours text for text / as a JSON value.

Summaries (``summarize``, per task and over both; ``all``): the runner's (tokens/s, speed-up over
plain constrained decoding in total wall time and after the first token, target passes per token,
mean accepted per step, identical rate), plus the forced-token share (``Stats.forced_tokens`` /
generated tokens), the grammar's milliseconds per generated token and its share of the decoding
time (``Stats.grammar_s`` / the time after the first token), and the shares of answers that parse
as JSON and that satisfy the schema. Reports: ``structured_report``.
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass, field, replace
from typing import Callable, Sequence

from tqdm import tqdm

from specdraft import Model

from .datasets.structured_data import TASKS, structured_items
from .llama_build_peer import STOCK_PEERS, OtherBuildPeer
from .runner import environment, with_derived_fields
from .runner import summarize as runner_summarize
from .structured_methods import (
    PLAIN,
    ConstrainedMethod,
    StructuredCase,
    StructuredMeasurement,
    constrained_methods,
    structured_case,
)
from .structured_peer import PEER, LlamaCppChatPeer, peer_same_record, peer_text_equal

__all__ = [
    "ALL",
    "PEER",
    "PLAIN",
    "StructuredBenchConfig",
    "StructuredResult",
    "build_cases",
    "build_methods",
    "run_structured_bench",
    "summarize",
]

ALL = "all"  # the summaries over every task


@dataclass(frozen=True)
class StructuredBenchConfig:
    """``limit`` documents per task of ``tasks``; ``peers``: the llama-cpp-python peer (llama.cpp only),
    and with ``stock_llama_lib`` (a build's ``llama_cpp/lib`` folder) the same peer on that build too;
    ``warm_up``: one untimed run of each method before the timed ones. ``share_prefill``: specdraft's
    methods reuse each prompt's prefill through the model's prefix cache, so only the first method's
    time includes it (for the test suite, where times are not read; the benchmark prefills per method,
    as the peer does)."""

    limit: int = 6
    seed: int = 0
    max_new_tokens: int = 192
    tasks: tuple[str, ...] = TASKS
    peers: bool = True
    warm_up: bool = True
    share_prefill: bool = False
    stock_llama_lib: str | None = None

    def __post_init__(self) -> None:
        if self.limit < 1 or self.max_new_tokens < 1:
            raise ValueError("limit and max_new_tokens must be >= 1")
        if not self.tasks or set(self.tasks) - set(TASKS):
            raise ValueError(f"tasks must be among {', '.join(TASKS)}, got {self.tasks}")


@dataclass
class StructuredResult:
    model: str
    backend: str
    config: StructuredBenchConfig
    environment: dict
    summaries: list[dict]  # one per (task, method); task "all" first (``summarize``)
    measurements: list[StructuredMeasurement] = field(default_factory=list)

    def to_dict(self) -> dict:
        return with_derived_fields(asdict(self), self.measurements)


def build_cases(target: Model, config: StructuredBenchConfig) -> list[StructuredCase]:
    return [
        structured_case(item, target, config.max_new_tokens)
        for item in structured_items(config.limit, config.seed, config.tasks)
    ]


def build_methods(target: Model, config: StructuredBenchConfig) -> list:
    """``constrained_methods`` and, on llama.cpp with ``peers``, the llama-cpp-python peer (and with
    ``stock_llama_lib`` the same peer on that build, in a worker process)."""
    methods: list = list(constrained_methods(target, share_prefill=config.share_prefill))
    if config.peers and target.backend == "llama-cpp":
        methods.append(LlamaCppChatPeer(target.file.path, target.max_length, target.threads))
        if config.stock_llama_lib:
            name, path = STOCK_PEERS["constrained"], target.file.path
            stock = OtherBuildPeer(name, config.stock_llama_lib, path, target.max_length, target.threads, "constrained")
            methods.append(stock)
    return methods


def run_structured_bench(
    target: Model,
    config: StructuredBenchConfig = StructuredBenchConfig(),
    methods: Sequence | None = None,
    cases: Sequence[StructuredCase] | None = None,
    progress: Callable[[str], None] | None = None,
) -> StructuredResult:
    """Every method on every case (module docstring); ``methods[0]`` must be plain constrained decoding."""
    cases = list(cases) if cases is not None else build_cases(target, config)
    methods = list(methods) if methods is not None else build_methods(target, config)
    if config.warm_up:
        warm = replace(cases[0], id="warm-up", max_new_tokens=min(8, cases[0].max_new_tokens))
        for method in methods:
            method.run(warm)
    measurements: list[StructuredMeasurement] = []
    with tqdm(
        total=len(methods) * len(cases), desc="bench structured", file=sys.stderr, disable=progress is not None
    ) as bar:
        for case in cases:
            plain: StructuredMeasurement | None = None
            for method in methods:
                if progress:
                    progress(f"{case.id} {method.name}")
                m = method.run(case)
                if plain is None:
                    plain = m
                if isinstance(method, ConstrainedMethod):
                    m.identical = m.token_ids == plain.token_ids
                else:
                    m.text_equal, m.same_record = peer_text_equal(m, plain), peer_same_record(m, plain)
                measurements.append(m)
                bar.update()
    summaries = summarize([m.name for m in methods], measurements, [c.task for c in cases])
    return StructuredResult(target.name, target.backend, config, environment(), summaries, measurements)


def summarize(
    method_names: Sequence[str], measurements: Sequence[StructuredMeasurement], tasks: Sequence[str]
) -> list[dict]:
    """One row per (task, method), task ``all`` first, then each task in ``tasks``' order (module
    docstring). The peer's ``identical_rate`` is None: its grammar is not ours."""
    rows = []
    for task in [ALL] + list(dict.fromkeys(tasks)):
        chosen = [m for m in measurements if task == ALL or m.task == task]
        for base in runner_summarize(method_names, chosen):
            mine = [m for m in chosen if m.method == base.method]
            tokens = sum(m.generated_tokens for m in mine)
            decode = sum(m.decode_s for m in mine)
            grammar = sum(m.grammar_s for m in mine)
            peer = base.method in (PEER, STOCK_PEERS["constrained"])
            row = {"task": task, **asdict(base)}
            row.update(
                identical_rate=None if peer else base.identical_rate,
                forced_share=None if peer else round(sum(m.forced_tokens for m in mine) / max(1, tokens), 4),
                forced_drafted=None if peer else sum(m.forced_drafted for m in mine),
                grammar_ms_per_token=None if peer else round(1e3 * grammar / max(1, tokens), 4),
                grammar_share=None if peer else (round(grammar / decode, 4) if decode else 0.0),
                valid_json_rate=_rate([m.valid_json for m in mine]),
                valid_schema_rate=_rate([m.valid_schema for m in mine]),
                finished_rate=_rate([m.finish_reason != "length" for m in mine]),
                text_equal_rate=_rate([bool(m.text_equal) for m in mine]) if peer else None,
                same_record_rate=_rate([bool(m.same_record) for m in mine]) if peer else None,
                same_prompt_rate=_rate([bool(m.same_prompt) for m in mine]) if peer else None,
            )
            rows.append(row)
    return rows


def _rate(flags: Sequence[bool]) -> float:
    return round(sum(flags) / len(flags), 4) if flags else 0.0

"""Runs a benchmark: every method on every prompt, same model, same stop rule, one process.

Plain decoding (specdraft's engine with no drafter) is the baseline: each method's speed-up is
``plain wall time / method wall time`` over the same prompts, and each output is checked for
being identical, token for token, to plain greedy. Each method gets one untimed warm-up run.
"""

from __future__ import annotations

import platform
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Sequence

import torch
from tqdm import tqdm

from .methods import BenchCase, Measurement, Method

if TYPE_CHECKING:
    from .suites import Suite


@dataclass
class MethodSummary:
    method: str
    wall_s: float
    generated_tokens: int
    tokens_per_s: float
    speedup: float  # vs plain, total wall time
    decode_speedup: float  # vs plain, time after the first token (the prefill excluded)
    mean_speedup_per_prompt: float
    forward_passes_per_token: float
    mean_accepted_tokens: float
    identical_rate: float


@dataclass
class BenchResult:
    benchmark: str
    model: str
    max_new_tokens: int
    prompts: int
    environment: dict
    summaries: list[MethodSummary]
    measurements: list[Measurement] = field(default_factory=list)
    quality: dict = field(default_factory=dict)  # e.g. ERRANT scores of the (identical) outputs
    retrieval: dict = field(default_factory=dict)  # datastore / index sizes and timings (rag_suites)

    def to_dict(self) -> dict:
        return with_derived_fields(asdict(self), self.measurements)


def with_derived_fields(data: dict, measurements: Sequence) -> dict:
    """``data`` (a result's ``asdict``) with each measurement row's generated tokens and passes per
    token added (properties, which ``asdict`` leaves out)."""
    for row, m in zip(data["measurements"], measurements):
        row["generated_tokens"] = m.generated_tokens
        row["forward_passes_per_token"] = round(m.forward_passes_per_token, 4)
    return data


def environment() -> dict:
    import transformers

    return {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "threads": torch.get_num_threads(),
        "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "time": time.strftime("%Y-%m-%d %H:%M:%S"),
    }


def run_benchmark(
    name: str, model_name: str, methods: Sequence[Method], cases: Sequence[BenchCase], warm_up: bool = True
) -> BenchResult:
    """``methods[0]`` must be plain decoding (the baseline). ``warm_up=False`` leaves out the untimed
    warm-up runs, where the times are not read (a rehearsal, a test)."""
    if warm_up:
        warm = replace(cases[0], id="warm-up", max_new_tokens=min(8, cases[0].max_new_tokens))
        for method in tqdm(methods, desc="warm-up", file=sys.stderr):
            method.run(warm)
    measurements: list[Measurement] = []
    with tqdm(total=len(methods) * len(cases), desc=f"bench {name}", file=sys.stderr) as bar:
        for case in cases:
            baseline: list[int] | None = None
            for method in methods:
                bar.set_postfix_str(f"{case.id} {method.name}")
                m = method.run(case)
                if baseline is None:
                    baseline = m.token_ids
                m.identical = m.token_ids == baseline
                measurements.append(m)
                bar.update()
    summaries = summarize([m.name for m in methods], measurements)
    max_new = max(case.max_new_tokens for case in cases)
    return BenchResult(name, model_name, max_new, len(cases), environment(), summaries, measurements)


def run_suite(name: str, model_name: str, suite: Suite) -> BenchResult:
    """``run_benchmark`` on the suite, with its quality and retrieval facts computed from plain's outputs."""
    result = run_benchmark(name, model_name, suite.methods, suite.cases)
    plain_outputs = {m.prompt_id: m.token_ids for m in result.measurements if m.method == suite.methods[0].name}
    result.quality = suite.quality(plain_outputs)
    result.retrieval = suite.retrieval(plain_outputs)
    return result


def summarize(method_names: Sequence[str], measurements: Sequence[Measurement]) -> list[MethodSummary]:
    by_method = {name: [m for m in measurements if m.method == name] for name in method_names}
    plain = {m.prompt_id: m for m in by_method[method_names[0]]}
    plain_wall = sum(m.wall_s for m in plain.values())
    plain_decode = sum(m.decode_s for m in plain.values())
    summaries = []
    for name, rows in by_method.items():
        wall = sum(m.wall_s for m in rows)
        decode = sum(m.decode_s for m in rows)
        tokens = sum(m.generated_tokens for m in rows)
        passes = sum(m.forward_passes for m in rows)
        per_prompt = [plain[m.prompt_id].wall_s / m.wall_s for m in rows if m.wall_s > 0]
        summaries.append(
            MethodSummary(
                method=name,
                wall_s=round(wall, 3),
                generated_tokens=tokens,
                tokens_per_s=round(tokens / wall, 3) if wall else 0.0,
                speedup=round(plain_wall / wall, 3) if wall else 0.0,
                decode_speedup=round(plain_decode / decode, 3) if decode else 0.0,
                mean_speedup_per_prompt=round(sum(per_prompt) / len(per_prompt), 3) if per_prompt else 0.0,
                forward_passes_per_token=round(passes / max(1, tokens), 4),
                mean_accepted_tokens=round(sum(m.mean_accepted_tokens for m in rows) / len(rows), 3),
                identical_rate=round(sum(bool(m.identical) for m in rows) / len(rows), 4),
            )
        )
    return summaries

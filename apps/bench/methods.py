"""The decoding methods a benchmark compares, each run on the same target model and case.

- ``SpecdraftMethod``: specdraft's engine with a drafter made per case (``plain`` has none: it is
  the baseline every ratio is taken against). ``specdraft_by_spec`` builds one from a drafter
  choice of ``specdraft.retrieval.drafter_registry`` (``prompt-lookup``, ``model:NAME``, ...);
  adapters add their own (copydraft drafts the case's source).
- ``TransformersMethod``: transformers' own ``generate`` (greedy), plain, with
  ``prompt_lookup_num_tokens`` or with ``assistant_model``: the peers a user of the transformers
  backend would otherwise pick. Forward passes are counted with a hook on the target module.
  (On the llama.cpp backend the peers are llama-cpp-python's own: ``llama_peers``.)
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Protocol

import torch
from transformers.generation.streamers import BaseStreamer

from specdraft import Drafter, GenerationConfig, Model, SpeculationConfig, SpeculativeGenerator, TransformersModel
from specdraft.apps.model_pool import ModelPool
from specdraft.retrieval.drafter_registry import DrafterSpec


@dataclass(frozen=True)
class BenchCase:
    """One prompt of a benchmark: what the target sees, and what a drafter may draft from."""

    id: str
    prompt_ids: tuple[int, ...]
    max_new_tokens: int
    source_ids: tuple[int, ...] = ()  # the text a copying drafter drafts from ("" if none)
    references: tuple[str, ...] = ()  # texts a reference drafter drafts from (retrieved passages, earlier turns)


@dataclass
class Measurement:
    method: str
    prompt_id: str
    token_ids: list[int]
    wall_s: float
    forward_passes: int  # target passes, prefill included
    mean_accepted_tokens: float  # draft tokens accepted per verify step
    first_token_s: float = 0.0  # from the start to the first generated token: the prefill, which no drafter speeds up
    identical: bool | None = None  # to plain greedy; filled in by the runner

    @property
    def decode_s(self) -> float:
        """The time after the first token: the part speculation can shorten."""
        return max(0.0, self.wall_s - self.first_token_s)

    @property
    def generated_tokens(self) -> int:
        return len(self.token_ids)

    @property
    def forward_passes_per_token(self) -> float:
        return self.forward_passes / max(1, self.generated_tokens)


class Method(Protocol):
    name: str

    def run(self, case: BenchCase) -> Measurement: ...


class SpecdraftMethod:
    """specdraft's engine; ``make_drafter(case)`` gives a fresh drafter per case (None: plain).

    Every request prefills its whole prompt, as transformers' ``generate`` and the peers do: the
    prefix cache would hand the methods after the first one a prompt another method had already
    run (``specdraft bench prefix-cache`` measures the cache on its own)."""

    def __init__(
        self,
        name: str,
        target: Model,
        make_drafter: Callable[[BenchCase], Drafter | None],
        speculation: SpeculationConfig = SpeculationConfig(),
    ) -> None:
        self.name = name
        self.target = target
        self.make_drafter = make_drafter
        self.speculation = speculation

    def run(self, case: BenchCase) -> Measurement:
        config = GenerationConfig(max_new_tokens=case.max_new_tokens)
        drafter = self.make_drafter(case)
        start = time.perf_counter()
        result = SpeculativeGenerator(self.target, self.speculation, prefix_cache=False).generate(
            list(case.prompt_ids), drafter, config
        )
        wall = time.perf_counter() - start
        stats = result.stats
        return Measurement(
            self.name,
            case.id,
            result.token_ids,
            wall,
            stats.target_forward_passes,
            stats.mean_accepted_tokens,
            stats.prefill_s,
        )


def plain(target: Model) -> SpecdraftMethod:
    return SpecdraftMethod("plain", target, lambda case: None)


def specdraft_by_spec(pool: ModelPool, target: Model, spec: DrafterSpec) -> SpecdraftMethod:
    """``specdraft:<spec>``: a fresh drafter of ``spec`` per case, the reference drafter over the
    case's ``references`` (the registry's completion drafters; see ``ModelPool.drafter``)."""
    pool.prepare(spec, target)
    greedy = GenerationConfig().sampling
    return SpecdraftMethod(
        f"specdraft:{spec}", target, lambda case: pool.drafter(spec, target, greedy, passages=case.references)
    )


class _PassCounter:
    def __init__(self, module: torch.nn.Module) -> None:
        self.count = 0
        self._handle = module.register_forward_pre_hook(self._hook)

    def _hook(self, *_: object) -> None:
        self.count += 1

    def close(self) -> None:
        self._handle.remove()


class _FirstTokenClock(BaseStreamer):
    """A streamer for ``generate`` that notes when the first generated token arrives (its first
    ``put`` is the prompt)."""

    def __init__(self, start: float) -> None:
        self.start = start
        self.puts = 0
        self.first_token_s = 0.0

    def put(self, value: object) -> None:
        self.puts += 1
        if self.puts == 2:
            self.first_token_s = time.perf_counter() - self.start

    def end(self) -> None:
        pass


class TransformersMethod:
    """transformers' ``generate`` with ``do_sample=False`` and the given extra arguments."""

    def __init__(self, name: str, target: TransformersModel, **generate_kwargs: object) -> None:
        self.name = name
        self.target = target
        self.generate_kwargs = generate_kwargs

    def run(self, case: BenchCase) -> Measurement:
        hf_model = self.target.hf_model
        input_ids = torch.tensor([list(case.prompt_ids)], device=hf_model.device)
        eos = sorted(self.target.eos_token_ids)
        counter = _PassCounter(hf_model)
        try:
            start = time.perf_counter()
            clock = _FirstTokenClock(start)
            with torch.inference_mode():
                output = hf_model.generate(
                    input_ids,
                    attention_mask=torch.ones_like(input_ids),
                    max_new_tokens=case.max_new_tokens,
                    do_sample=False,
                    eos_token_id=eos or None,
                    pad_token_id=eos[0] if eos else None,
                    streamer=clock,
                    **self.generate_kwargs,
                )
            wall = time.perf_counter() - start
        finally:
            counter.close()
        token_ids = output[0, len(case.prompt_ids) :].tolist()
        steps = max(1, counter.count - 1)  # passes after the prefill
        mean_accepted = max(0.0, len(token_ids) / steps - 1.0)
        return Measurement(
            self.name, case.id, token_ids, wall, counter.count, mean_accepted, clock.first_token_s or wall
        )


def transformers_prompt_lookup(target: TransformersModel, num_tokens: int = 10) -> TransformersMethod:
    return TransformersMethod("transformers:prompt-lookup", target, prompt_lookup_num_tokens=num_tokens)


def transformers_assisted(target: TransformersModel, assistant: TransformersModel, name: str) -> TransformersMethod:
    return TransformersMethod(f"transformers:assisted:{name}", target, assistant_model=assistant.hf_model)


def transformers_plain(target: TransformersModel) -> TransformersMethod:
    return TransformersMethod("transformers:plain", target)

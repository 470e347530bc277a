"""SpeculativeGenerator: draft -> verify -> accept -> commit, until a stop condition.

The engine knows the model only through the ``Model`` and ``Target`` protocols (any backend) and
drafts only through the ``Drafter`` protocol; nothing here needs torch unless a draft carrying
distributions is verified by rejection sampling; with no drafter it is plain autoregressive decoding
(one token per target pass), the baseline every speed-up is measured against. Output is the target's own: greedy
decoding gives its greedy tokens exactly, sampling gives its distribution exactly.

Every generator uses the model's prefix cache (``specdraft.prefix_cache``) unless built with
``prefix_cache=False`` or the model's cache is switched off: the prefill starts from the longest
prefix an earlier request left there, and the request leaves its own sequence for later ones
(``Stats.cached_prompt_tokens``). The output is unchanged.

The constraint is a seam of its own (``specdraft.constrained.selection``): a ``Selection`` says how the
target's choice is taken at each row and wraps the request's drafter; with no constraint it is
``Unconstrained`` (the target's own choices, the drafter as it is), so the loop below is the same
either way. With ``GenerationConfig.constraint`` every choice the target makes is taken from its logits
masked by the constraint's grammar, at every draft position, so the output is token for token plain
constrained decoding's; the bytes the grammar forces are drafted too
(``SpeculationConfig.grammar_drafts``). A target that returns no logits cannot be constrained
(``GrammarUnavailableError``).
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator, Literal, Sequence

from .acceptance import Acceptance, speculative_accept
from .constrained import Constraint
from .constrained.selection import selection_for
from .cost import PassCostProfile
from .draft import Draft
from .drafter import Drafter, NoDrafter
from .logprobs import LogprobsUnavailableError, TokenLogprob, predicting_rows, token_logprobs
from .model import Model
from .policy import SpeculationConfig, SpeculationPolicy
from .prefix_cache import prefix_cache_for
from .sampling import PositionalRandom, SamplingParams, TokenChooser, warp
from .stats import Stats
from .target import Target
from .text_stream import Source, TextAssembler, TextPiece
from .verification import Verification

FinishReason = Literal["stop", "length"]


@dataclass(frozen=True)
class GenerationConfig:
    """One request's decoding settings. ``temperature`` 0 is greedy; ``seed`` makes sampling
    reproducible: the same seed gives the same text on every run, and with a deterministic drafter
    (or none) the same text as plain sampling. Seeded requests choose draft lengths from a fixed
    nominal cost model instead of measured timings, so that they repeat exactly. ``stop`` strings
    end the text (they are not included); EOS ends it too unless ``ignore_eos``. ``logprobs``: None
    collects none; ``k`` >= 0 collects, for every generated token, its log-probability under the
    target's raw logits and the ``k`` likeliest tokens' (``specdraft.logprobs``; needs a target that
    returns logits). The tokens are the same either way. ``constraint``: the answer must match it
    (``specdraft.constrained``; needs a target that returns logits); it ends with the model's own
    end-of-generation token once the constraint is complete (``ignore_eos`` does not apply then)."""

    max_new_tokens: int = 128
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    seed: int | None = None
    stop: tuple[str, ...] = ()
    ignore_eos: bool = False
    logprobs: int | None = None
    constraint: Constraint | None = None

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.logprobs is not None and self.logprobs < 0:
            raise ValueError(f"logprobs must be None or >= 0, got {self.logprobs}")
        self.sampling  # validates the sampling fields

    @property
    def sampling(self) -> SamplingParams:
        return SamplingParams(self.temperature, self.top_p, self.top_k)

    @property
    def stops_at_eos(self) -> bool:
        """EOS ends the text unless ``ignore_eos``, and always under a constraint (it ends with EOS)."""
        return not self.ignore_eos or self.constraint is not None


@dataclass
class GenerationResult:
    text: str
    token_ids: list[int]  # generated ids only (EOS included when it ended the text)
    prompt_token_ids: list[int]
    finish_reason: FinishReason
    stats: Stats
    pieces: list[TextPiece] = field(default_factory=list)
    logprobs: list[TokenLogprob] | None = None  # one per token of token_ids, when asked for


class GenerationStream:
    """Iterate to receive ``TextPiece``s as tokens are accepted; ``result`` is set at the end.

    ``logprobs`` (None unless the config asks for them) grows by one ``TokenLogprob`` per generated
    token as it is accepted, before any piece holding its text is yielded: a streaming consumer reads
    the new entries after each piece (entries can run ahead of the text while it is held back)."""

    def __init__(
        self,
        steps: Iterator[TextPiece],
        finish: Callable[[], GenerationResult],
        logprobs: list[TokenLogprob] | None = None,
        stats: Stats | None = None,
    ) -> None:
        self._steps = steps
        self._finish = finish
        self.logprobs = logprobs
        self.stats = stats if stats is not None else Stats()  # the run's, as it grows (final in ``result``)
        self.result: GenerationResult | None = None

    def __iter__(self) -> Iterator[TextPiece]:
        yield from self._steps
        self.result = self._finish()

    def consume(self) -> GenerationResult:
        for _ in self:
            pass
        assert self.result is not None
        return self.result

    def stop(self) -> GenerationResult:
        """End the generation now (its target session is freed at once) and return what it produced
        so far; ``finish_reason`` stays "length" unless EOS or a stop string had already ended it.
        Text held back while it might still become a stop string is not included. After a full
        iteration this is just ``result``."""
        if self.result is None:
            close = getattr(self._steps, "close", None)
            if close is not None:
                close()
            self.result = self._finish()
        return self.result


class SpeculativeGenerator:
    """Generates with ``model``; ``prefix_cache`` (default True) uses the model's prefix cache."""

    def __init__(
        self, model: Model, speculation: SpeculationConfig = SpeculationConfig(), prefix_cache: bool = True
    ) -> None:
        self.model = model
        self.speculation = speculation
        self.prefix_cache = prefix_cache

    def generate(
        self, prompt_ids: Sequence[int], drafter: Drafter | None = None, config: GenerationConfig = GenerationConfig()
    ) -> GenerationResult:
        return self.stream(prompt_ids, drafter, config).consume()

    def stream(
        self,
        prompt_ids: Sequence[int],
        drafter: Drafter | None = None,
        config: GenerationConfig = GenerationConfig(),
        target: Target | None = None,
    ) -> GenerationStream:
        """The generation, step by step. ``target``: a target the caller made for this request (the edge
        client's, whose drafter shares its link to the server; it must choose tokens as ``config``
        says); by default ``model.new_target``. The stream closes it."""
        prompt_ids = [int(t) for t in prompt_ids]
        if not prompt_ids:
            raise ValueError("the prompt must hold at least one token")
        if len(prompt_ids) >= self.model.max_length:
            raise ValueError(f"prompt of {len(prompt_ids)} tokens exceeds the model's {self.model.max_length}")
        run = _Run(self.model, self.speculation, prompt_ids, drafter or NoDrafter(), config, self.prefix_cache, target)
        return GenerationStream(run.steps(), run.result, run.logprobs, run.stats)


class _Run:
    """The state of one generation: the target's session, the policy, the text assembled so far."""

    def __init__(
        self,
        model: Model,
        speculation: SpeculationConfig,
        prompt_ids: list[int],
        drafter: Drafter,
        config: GenerationConfig,
        prefix_cache: bool = True,
        target: Target | None = None,
    ) -> None:
        self.model = model
        self.use_prefix_cache = prefix_cache
        self.config = config
        self.sampling = config.sampling
        self.timed = config.seed is None  # seeded requests decide from nothing that is timed
        cost = model.cost if self.timed else PassCostProfile.nominal()
        self.policy = SpeculationPolicy(speculation, cost)
        self._free_first_step = False  # set after the prefill: the next step is the first and costs no pass plainly
        seed = secrets.randbits(62) if config.seed is None else config.seed
        self.rng = PositionalRandom(seed)
        self.chooser = TokenChooser(self.sampling, seed)
        self.target = model.new_target(self.chooser) if target is None else target
        if config.logprobs is not None and not self.target.returns_logits:
            self.target.close()
            raise LogprobsUnavailableError(f"logprobs need a target that returns logits; {model.backend}'s does not")
        try:
            self.selection = selection_for(config.constraint, model, self.target, self.chooser, speculation)
        except BaseException:
            self.target.close()
            raise
        self.drafter = self.selection.drafter(drafter)
        self.logprobs: list[TokenLogprob] | None = None if config.logprobs is None else []
        self.prompt_ids = prompt_ids
        self.generated: list[int] = []
        self.assembler = TextAssembler(model.tokenizer, config.stop)
        self.pieces: list[TextPiece] = []
        self.stats = Stats(prompt_tokens=len(prompt_ids), exact=model.exact)
        self.eos = model.eos_token_ids if config.stops_at_eos else frozenset()
        self.finish_reason: FinishReason = "length"
        self._started = 0.0

    def steps(self) -> Iterator[TextPiece]:
        try:
            yield from self._steps()
        finally:  # also when the consumer stops early (a client went away)
            self.target.close()

    def _steps(self) -> Iterator[TextPiece]:
        start = self._started = time.perf_counter()
        self._prefill()
        self.stats.prefill_s = time.perf_counter() - start
        self._free_first_step = self.policy.config.plain_first_step and self.target.prefill_predicts_next
        if self._free_first_step:  # no draft this step, but drafters learn where the output starts
            self.drafter.propose(list(self.prompt_ids), 0)
        done = False
        while not done:
            # 1. draft
            budget, limit = self._budget()
            draft, draft_seconds = self._draft(limit)
            # 2. verify: one target forward pass over the pending token and the whole draft
            start = time.perf_counter()
            verification = self.target.verify(draft)
            self.stats.verify_s += time.perf_counter() - start
            # 3. accept (under a constraint the grammar follows the accepted tokens, the bonus too)
            accepted = self._accept(draft, verification)
            # 4. commit (and tell the drafter and the policy)
            self.stats.fallback_steps += int(budget == 0 and self.policy.falling_back)
            self.target.commit(accepted.path, accepted.next_token)
            self.drafter.observe(accepted.accepted_len)
            drafted, kept = self.selection.counted(len(draft), accepted.accepted_len)  # what the policy sized
            self.policy.observe(budget, drafted, kept, draft_seconds if self.timed else 0.0)
            self.stats.record_step(len(draft), accepted.accepted_len, draft.depths)
            new: list[tuple[int, Source]] = [(draft.tokens[i], "draft") for i in accepted.path]
            new.append((accepted.next_token, "target"))
            scores = self._logprobs(verification, accepted, [token for token, _ in new])
            for i, (token, source) in enumerate(new):
                if self.logprobs is not None and scores is not None:
                    self.logprobs.append(scores[i])
                pieces, done = self._append(token, source)
                yield from pieces
                if done:
                    break
        yield from self._emit(self.assembler.finish())

    def _prefill(self) -> None:
        """The target's prefill, from the model's prefix cache unless it is off (a target without a
        cache of its own here reads it as a miss)."""
        cache = prefix_cache_for(self.model) if self.use_prefix_cache else None
        if cache is None:
            self.target.prefill(self.prompt_ids)
        else:
            self.stats.cached_prompt_tokens = self.target.prefill_cached(self.prompt_ids, cache)

    def _budget(self) -> tuple[int, int]:
        """(the budget from the policy, the most nodes a draft may have: ``Selection.draft_size``). They
        differ only under a constraint, whose forced tokens the policy does not limit (``GrammarDrafter``)."""
        if self._free_first_step:  # SpeculationConfig.plain_first_step
            self._free_first_step = False
            return 0, 0
        remaining = self.config.max_new_tokens - len(self.generated) - 1  # the bonus token is free
        room = self.target.max_length - self.target.context_length - 1
        limit = max(0, min(remaining, room))
        budget = min(self.policy.budget(), limit)
        return budget, self.selection.draft_size(budget, limit)

    def _draft(self, limit: int) -> tuple[Draft, float]:
        """The drafter's proposal (at most ``limit`` nodes, shaped for the target) and the seconds it took.

        A target without logits verifies by comparing tokens, so it gets the draft without its
        distributions (sample-and-compare keeps the target's distribution for any draft)."""
        if limit == 0:
            return Draft.empty(), 0.0
        start = time.perf_counter()
        context = self.prompt_ids + self.generated
        draft = self.drafter.propose(context, limit).truncated(limit)
        if not self.target.returns_logits:  # compared with choices, not rejection-sampled
            draft = draft.deterministic()
        draft = draft.pruned(self.target.max_branches)
        seconds = time.perf_counter() - start
        self.stats.draft_s += seconds
        return draft, seconds

    def _accept(self, draft: Draft, verification: Verification) -> Acceptance:
        """Greedy and deterministic drafts: follow the target's choices (``Selection.follow``: its own,
        or under a constraint the masked ones). Drafts carrying distributions under sampling: rejection
        sampling over the target's warped logits. A target that accepted itself (``Verification.accepted``)
        is taken at its word."""
        if verification.acceptance is not None:
            return verification.acceptance
        position = len(self.prompt_ids) + len(self.generated)
        if self.sampling.greedy or draft.probs is None or verification.logits is None:
            return self.selection.follow(draft, verification, position)
        return speculative_accept(draft, warp(verification.logits, self.sampling).cpu(), self.rng, position)

    def _logprobs(
        self, verification: Verification, accepted: Acceptance, tokens: list[int]
    ) -> list[TokenLogprob] | None:
        """The emitted tokens' log-probabilities under the rows that predicted them (None: not asked for)."""
        if self.logprobs is None:
            return None
        assert self.config.logprobs is not None and verification.logits is not None
        return token_logprobs(verification.logits, predicting_rows(accepted.path), tokens, self.config.logprobs)

    def _append(self, token: int, source: Source) -> tuple[list[TextPiece], bool]:
        """Add one token; returns the text pieces it released and whether generation is over."""
        self.generated.append(token)
        if token in self.eos:
            self.finish_reason = "stop"
            return [], True
        pieces = self._emit(self.assembler.push(token, source))
        if self.assembler.stopped:
            self.finish_reason = "stop"
            return pieces, True
        if len(self.generated) >= self.config.max_new_tokens:
            return pieces, True
        if self.target.context_length >= self.target.max_length:
            return pieces, True
        return pieces, False

    def _emit(self, pieces: list[TextPiece]) -> list[TextPiece]:
        self.pieces.extend(pieces)
        return pieces

    def result(self) -> GenerationResult:
        self.stats.generated_tokens = len(self.generated)
        self.stats.target_forward_passes = self.target.forward_passes
        self.stats.wall_s = time.perf_counter() - self._started
        self.stats.pass_cost_ms = {width: 1000 * seconds for width, seconds in self.policy.cost.snapshot().items()}
        self.selection.report(self.stats)
        return GenerationResult(
            text=self.assembler.text,
            token_ids=list(self.generated),
            prompt_token_ids=list(self.prompt_ids),
            finish_reason=self.finish_reason,
            stats=self.stats,
            pieces=list(self.pieces),
            logprobs=None if self.logprobs is None else list(self.logprobs),
        )

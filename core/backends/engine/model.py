"""EngineModel and EngineTarget: the ``Model`` and ``Target`` protocols over a serving engine's HTTP API.

``EngineModel(EngineConfig(url, api), local)`` is a model that an existing serving engine (vLLM,
SGLang, the llama-cpp-python server) runs: ``SpeculativeGenerator(EngineModel(...), drafter)`` drafts
on this machine (copies, passages, a datastore, a small draft model) and has the engine verify, one
HTTP request per draft branch. ``local`` is a model on this machine with the engine's tokenizer
(compared with the engine's at start-up where the engine can tokenize): it encodes prompts and
decodes text; nothing of it runs as the target.

What the engine returns is each prompt position's top-1 log-probability, so an ``EngineTarget``
returns only the target's choices (``returns_logits`` False) and is **greedy only**:

- greedy verification is exact from the top-1: a draft token is kept while it is the engine's
  argmax after the tokens before it, and the first row that differs gives the engine's own token.
  Ties (two tokens with the same log-probability) are read as the engine reports them: vLLM's rank
  1, SGLang's first top entry, llama-cpp-python's first top entry (its greedy sampler picks the
  lowest id among equal logits; in float32 an exact tie of distinct tokens is all but unseen).
- sampling is refused (``new_target`` raises ``ValueError``): lossless sampling needs either the
  whole distribution per row (rejection sampling) or the engine drawing each position's token with
  specdraft's positional randomness (sample-and-compare); these APIs give neither (top-k only, and
  the engine's own seeded sampler draws by request order, not by position).
- trees: each root-to-leaf branch is one request (context + branch); ``EngineConfig.branches``
  (default 1) is what the target asks for, so the generator sends the drafter's best branch only.
- constraints (``response_format``, tools) on an engine whose API ranks (vLLM): the grammar runs
  here, on ``local``'s vocabulary (``grammar_compiler``: the same tokenizer as the engine's), and the
  target ranks its candidates (``rank_candidates``): each verification asks for the top
  ``EngineConfig.candidates`` of every row (``Verification.from_ranked``), and a row none of whose
  ranked tokens the grammar allows is resolved by one more request, the engine's own greedy token
  among the allowed ones (``resolve``). The output is greedy decoding of the engine's rows under the
  mask, exactly as far as unconstrained verification is (``exact``; docs/engine-vllm.md).

Calls map onto requests as follows: ``prefill`` sends nothing (the first ``verify`` carries the
context), ``verify`` sends one request per branch (each counted in ``forward_passes`` and timed into
``EngineModel.cost`` by width, which the draft-length policy reads), ``commit`` is local, ``close``
sends nothing. Misuse raises ``RuntimeError`` as the local targets do. Failures of the engine raise
``EngineError`` (unreachable, refused, unusable answer) with the engine's address. ``prefill_cached`` is a
miss (the engine keeps its own prefix cache), and ``new_session`` raises ``SessionsUnavailableError``:
nothing of the sequence is kept on this machine.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Sequence

from ...constrained.grammar import GrammarCompiler
from ...cost import PassCostProfile
from ...draft import Draft
from ...sampling import SamplingUnavailableError, TokenChooser
from ...served_text import ServedText
from ...target import CacheElsewhere
from ...verification import Verification
from .apis import PROBE_TEXT, SglangApi, VllmApi
from .config import EngineConfig
from .http import EngineClient, EngineError
from .llama_server import LlamaServerApi

if TYPE_CHECKING:
    from ...model_config import ModelConfig

DEFAULT_MAX_LENGTH = 2048  # the llama-cpp-python server's default n_ctx, where the engine does not say


def make_api(config: EngineConfig, client: EngineClient, local: Any) -> Any:
    if config.api == "vllm":
        return VllmApi(client, config.model)
    if config.api == "sglang":
        return SglangApi(client, config.model)
    return LlamaServerApi(client, config.model, local)


class EngineModel(ServedText):
    """The engine's model (``Model`` protocol); text through ``local`` (see the module docstring)."""

    backend = "engine"
    served_by = "runs on a serving engine"

    def __init__(self, config: EngineConfig, local: Any) -> None:
        self.config = config
        self.local = local
        self.client = EngineClient(config.base, config.timeout, config.api_key)
        self.api = make_api(config, self.client, local)
        self.info = self.api.info()
        self._check_tokenizer()
        self.name = f"{self.info['model']} @ {config.base}"
        self.tokenizer = local.tokenizer
        self.cost = PassCostProfile()
        self._max_length = config.max_length or int(self.info.get("max_length") or 0) or DEFAULT_MAX_LENGTH

    @classmethod
    def load(cls, config: "ModelConfig", local: Any) -> "EngineModel":
        """The engine ``config.engine`` names, with ``local`` (``config.local`` loaded on this machine)
        for the text; ValueError when the config names no engine."""
        if config.engine is None:
            raise ValueError("the engine backend needs an engine (--engine-url URL)")
        return cls(config.engine, local)

    def _check_tokenizer(self) -> None:
        """The engine's token ids for a probe text must equal the local tokenizer's (where the
        engine can tokenize: vLLM's /tokenize, llama-cpp-python's /extras/tokenize)."""
        try:
            engine_ids = self.api.tokenize(PROBE_TEXT)
        except EngineError:
            engine_ids = None  # the engine has no tokenize route: nothing to compare
        if engine_ids is not None and engine_ids != self.local.tokenizer.encode(PROBE_TEXT, add_special_tokens=False):
            raise ValueError(
                f"the local model {getattr(self.local, 'name', self.local)!r} does not tokenize like "
                f"the engine's model {self.info['model']!r}"
            )

    @property
    def exact(self) -> bool:
        return self.config.exact

    def grammar_compiler(self) -> GrammarCompiler:
        """``local``'s compiler where the engine's API ranks candidates (vLLM); else
        ``GrammarUnavailableError`` (``ServedText``)."""
        if not self.api.ranks:
            return super().grammar_compiler()
        compiler: GrammarCompiler = self.local.grammar_compiler()
        return compiler

    @property
    def max_length(self) -> int:
        return self._max_length

    @property
    def vocab_size(self) -> int:
        return self.local.vocab_size

    @property
    def eos_token_ids(self) -> frozenset[int]:
        return self.local.eos_token_ids

    @property
    def has_chat_template(self) -> bool:
        return self.local.has_chat_template

    @property
    def chat_template(self) -> str | None:
        return self.local.chat_template  # the same checkpoint's template, read locally

    def new_target(self, chooser: TokenChooser = TokenChooser()) -> "EngineTarget":
        if not chooser.params.greedy:
            raise SamplingUnavailableError(
                "the engine backend verifies greedy decoding only (temperature 0): an engine's "
                "top-1 log-probabilities cannot verify sampled tokens losslessly"
            )
        return EngineTarget(self)


class EngineTarget(CacheElsewhere):  # the engine keeps its own prefix cache
    """One sequence verified by the engine (``Target`` protocol; see the module docstring)."""

    returns_logits = False
    prefill_predicts_next = False  # the prefill only records the prompt; the first verify asks the engine

    def __init__(self, model: EngineModel) -> None:
        self.model = model
        self._context: list[int] | None = None
        self._verified: Draft | None = None
        self._ranked = False  # rank_candidates() was asked for
        self.forward_passes = 0

    def rank_candidates(self) -> bool:
        self._ranked = bool(self.model.api.ranks)
        return self._ranked

    @property
    def context_length(self) -> int:
        return len(self._context or ())

    @property
    def max_length(self) -> int:
        return self.model.max_length

    @property
    def max_branches(self) -> int:
        return self.model.config.branches

    def prefill(self, context_ids: Sequence[int]) -> None:
        if self._context is not None:
            raise RuntimeError("prefill() starts a sequence; this target already holds one")
        if not context_ids:
            raise ValueError("the context must hold at least one token")
        self._context = [int(t) for t in context_ids]

    def verify(self, draft: Draft) -> Verification:
        if self._verified is not None:
            raise RuntimeError("verify() twice without commit()")
        if self._context is None:
            raise RuntimeError("verify() before prefill()")
        context = self._context
        if len(context) + draft.max_depth >= self.max_length:
            raise ValueError(
                f"{len(context)} tokens and a draft {draft.max_depth} deep exceed the engine's context of "
                f"{self.max_length}"
            )
        first = len(context)
        ranked: list[list[int]] = [[] for _ in range(1 + len(draft))]  # []: a row the walk cannot reach
        branches = [draft.path_to(leaf) for leaf in draft.leaves] or [[]]
        for path in branches:
            tokens = [draft.tokens[node] for node in path]
            start = time.perf_counter()
            if self._ranked:
                rows = self.model.api.ranked(context + tokens, first, self.model.config.candidates)
            else:
                rows = [[token] for token in self.model.api.choices(context + tokens, first)]
            self.model.cost.record(1 + len(tokens), time.perf_counter() - start)
            self.forward_passes += 1
            ranked[0] = rows[0]
            for depth, node in enumerate(path, start=1):
                if depth < len(rows):
                    ranked[1 + node] = rows[depth]
                elif [row[0] for row in rows[:depth]] == tokens[:depth]:  # the walk reaches an unanswered row
                    raise EngineError(
                        "the engine's own next tokens cannot be sent back to it as text "
                        "(llama-cpp-python server); use an engine that takes token ids"
                    )
        self._verified = draft
        if not self._ranked:
            return Verification.from_choices([row[0] if row else -1 for row in ranked])
        return Verification.from_ranked(ranked, lambda row, allowed: self._resolve(draft, row, allowed))

    def _resolve(self, draft: Draft, row: int, allowed: Sequence[int]) -> int:
        """The engine's own greedy token at ``row`` of ``draft`` among ``allowed`` (one request)."""
        assert self._context is not None
        prefix = [] if row == 0 else [draft.tokens[node] for node in draft.path_to(row - 1)]
        self.forward_passes += 1
        return int(self.model.api.choose_among(self._context + prefix, allowed))

    def commit(self, path: Sequence[int], next_token: int) -> None:
        if self._verified is None:
            raise RuntimeError("commit() without verify()")
        draft, self._verified = self._verified, None
        assert self._context is not None
        self._context.extend(draft.tokens[node] for node in path)
        self._context.append(int(next_token))

    def close(self) -> None:
        self._context = None
        self._verified = None

"""The transformers backend: a causal LM on CPU or CUDA, its tokenizer, and per-request sessions.

``TransformersModel`` (the ``Model`` protocol) holds the weights and tokenizer, loaded once and
shared by every request; it never holds sequence state. ``TransformersSession`` is one sequence's
KV cache with a forward pass that accepts a token tree (tree attention mask + tree positions).
``TransformersTarget`` implements the ``Target`` protocol on a session, and ``prefill_cached``
(``specdraft.prefix_cache``): it starts from a copy of the longest cached prefix and, when closed,
stores its sequence's keys and values. Draft models use sessions too. In float32 (the default) it
is the exact reference backend.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Sequence

import torch

from ...cost import PassCostProfile
from ...draft import ROOT, Draft
from .tokenizer import HFTokenizer
from .kv_cache import KVCache
from ...model_config import ModelConfig
from ...prefix_cache import PrefixCache
from ...sampling import TokenChooser
from ...verification import Verification

log = logging.getLogger(__name__)

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def resolved_device(config: ModelConfig) -> torch.device:
    if config.device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(config.device)


def resolved_dtype(config: ModelConfig) -> torch.dtype:
    return torch.float32 if config.dtype == "auto" else _DTYPES[config.dtype]  # see ModelConfig


class TransformersModel:
    """A loaded causal LM + tokenizer. Thread-safe: forward passes are serialised by a lock.

    ``tokenizer`` is the ``Tokenizer`` protocol over ``hf_tokenizer`` (transformers' own object,
    for code that runs transformers itself, such as the benchmark's peers)."""

    backend = "transformers"

    def __init__(self, hf_model, tokenizer, name: str = "model") -> None:
        self.hf_model = hf_model.eval()
        self.hf_tokenizer = tokenizer
        self.tokenizer = HFTokenizer(tokenizer)
        self.name = name
        self.cost = PassCostProfile()
        self._lock = threading.Lock()
        self.verify_batcher = None  # opt-in: specdraft.backends.transformers.verify_batcher.enable_verify_batching

    @classmethod
    def load(cls, config: ModelConfig = ModelConfig()) -> "TransformersModel":
        """Load ``config.model`` (registry names are converted once and cached; see specdraft.models)."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from ...models import resolve_checkpoint

        path = resolve_checkpoint(config.model)
        hf_model = AutoModelForCausalLM.from_pretrained(path, dtype=resolved_dtype(config))
        hf_model.to(resolved_device(config))
        return cls(hf_model, AutoTokenizer.from_pretrained(path), name=config.model)

    # --- facts --------------------------------------------------------------------------------
    @property
    def device(self) -> torch.device:
        return self.hf_model.device

    @property
    def exact(self) -> bool:
        """float32/float64 passes agree with one-token passes far below any logit gap that matters
        (see ``ModelConfig``); half precision does not."""
        return self.hf_model.dtype in (torch.float32, torch.float64)

    @property
    def vocab_size(self) -> int:
        return self.hf_model.get_output_embeddings().weight.shape[0]

    @property
    def max_length(self) -> int:
        return int(getattr(self.hf_model.config, "max_position_embeddings", 2048))

    @property
    def eos_token_ids(self) -> frozenset[int]:
        ids: set[int] = set()
        configured = getattr(self.hf_model.generation_config, "eos_token_id", None)
        if configured is not None:
            ids.update([configured] if isinstance(configured, int) else configured)
        if self.hf_tokenizer.eos_token_id is not None:
            ids.add(self.hf_tokenizer.eos_token_id)
        return frozenset(ids)

    # --- text ---------------------------------------------------------------------------------
    @property
    def has_chat_template(self) -> bool:
        return self.tokenizer.chat_template is not None

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=True)

    def encode_chat(self, messages: Sequence[dict]) -> list[int]:
        """Token ids of ``messages`` wrapped in the model's chat template, ready for the answer."""
        if not self.has_chat_template:
            raise ValueError(f"{self.name} has no chat template")
        return self.tokenizer.encode(self.tokenizer.apply_chat_template(messages))

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(ids)

    # --- compute ------------------------------------------------------------------------------
    def forward(
        self,
        cache: KVCache,
        tokens: Sequence[int],
        positions: Sequence[int] | None = None,
        tree_mask=None,
        all_logits: bool = True,
    ) -> torch.Tensor:
        """Run ``tokens`` after what ``cache`` holds, appending their keys/values to it.

        ``positions``/``tree_mask`` (bool ``[q, q]`` array, True = may attend) describe a token tree;
        None means an ordinary causal chain. Returns logits ``[q, vocab]`` (or ``[1, vocab]`` for
        the last token when ``all_logits`` is False), float32 on the model's device. With a
        ``verify_batcher`` attached, a verification pass may run in one padded pass with other
        sequences' (``specdraft.backends.transformers.verify_batcher``); prefills always run alone.
        """
        batcher = self.verify_batcher
        if all_logits and batcher is not None and batcher.accepts(cache):
            return batcher.forward(cache, tokens, positions, tree_mask)
        return self.forward_alone(cache, tokens, positions, tree_mask, all_logits)

    def forward_alone(self, cache: KVCache, tokens: Sequence[int], positions: Sequence[int] | None = None,
                      tree_mask=None, all_logits: bool = True) -> torch.Tensor:
        """``forward`` as one pass of this sequence alone (what every pass was before batching)."""
        past = len(cache)
        q = len(tokens)
        device = self.device
        input_ids = torch.tensor([list(tokens)], dtype=torch.long, device=device)
        kwargs = {}
        if tree_mask is not None:
            allowed = torch.cat([torch.ones(q, past, dtype=torch.bool), torch.as_tensor(tree_mask)], dim=1)
            bias = torch.zeros(allowed.shape, dtype=self.hf_model.dtype)
            bias.masked_fill_(~allowed, torch.finfo(self.hf_model.dtype).min)
            kwargs["attention_mask"] = bias[None, None].to(device)  # [1, 1, q, past + q]
            kwargs["position_ids"] = torch.tensor([list(positions)], dtype=torch.long, device=device)
        with self._lock, torch.inference_mode():
            start = time.perf_counter()
            out = self.hf_model(
                input_ids=input_ids,
                past_key_values=cache.cache,
                use_cache=True,
                logits_to_keep=0 if all_logits else 1,
                **kwargs,
            )
            logits = out.logits[0].float()
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            if all_logits:  # verification-shaped passes only: a prefill keeps one row of logits
                self.cost.record(q, time.perf_counter() - start)
        return logits

    def new_session(self) -> "TransformersSession":
        return TransformersSession(self)

    def new_target(self, chooser: TokenChooser = TokenChooser()) -> "TransformersTarget":
        return TransformersTarget(self, chooser)


class TransformersSession:
    """One sequence's KV cache on a ``TransformersModel``: feed tokens or token trees, roll back."""

    def __init__(self, model: TransformersModel) -> None:
        self.model = model
        self.cache = KVCache(model.hf_model.config)

    def __len__(self) -> int:
        return len(self.cache)

    def feed(self, tokens: Sequence[int], parents: Sequence[int] | None = None, all_logits: bool = True) -> torch.Tensor:
        """Run ``tokens`` after the cache; ``parents[i]`` (ROOT or an earlier index) makes them a tree.

        Returns logits ``[len(tokens), vocab]``; the cache grows by ``len(tokens)``.
        """
        if parents is None or all(p == i - 1 for i, p in enumerate(parents)):
            return self.model.forward(self.cache, tokens, all_logits=all_logits)
        tree = Draft(tuple(tokens), tuple(parents))
        positions = [len(self.cache) + depth - 1 for depth in tree.depths]
        return self.model.forward(self.cache, tokens, positions, tree.ancestor_mask(), all_logits)

    def truncate(self, length: int) -> None:
        self.cache.truncate(length)

    def keep(self, start: int, offsets: Sequence[int]) -> None:
        self.cache.keep(start, offsets)


class TransformersTarget:
    """The ``Target`` protocol on a transformers session (one request).

    The prefill runs the whole context and keeps the logits of its last position, so the first
    verification needs no pending token (and with an empty draft, no pass at all): plain decoding
    costs one pass per generated token, prefill included, as in transformers' ``generate``.
    """

    max_branches = 1 << 30  # a tree mask takes any shape
    returns_logits = True
    prefill_predicts_next = True

    def __init__(self, model: TransformersModel, chooser: TokenChooser = TokenChooser()) -> None:
        self.model = model
        self.chooser = chooser
        self.session = model.new_session()
        self._pending: int | None = None  # the last committed token, not yet in the cache
        self._next_logits: torch.Tensor | None = None  # [vocab] after the prefill, before any verify
        self._verified_at: int | None = None  # cache index of the first draft node being verified
        self.forward_passes = 0
        self.cached_prompt_tokens = 0  # prompt tokens restored from a prefix cache
        self._tokens: list[int] = []  # the tokens whose keys/values the session holds, in order
        self._draft_tokens: tuple[int, ...] = ()  # the draft awaiting commit
        self._dirty = False  # a forward pass failed half-way: the cache may be inconsistent
        self._prefix_cache: PrefixCache | None = None  # offered the sequence on close

    @property
    def context_length(self) -> int:
        return len(self.session) + (self._pending is not None)

    @property
    def max_length(self) -> int:
        return self.model.max_length

    def _feed(self, tokens: Sequence[int], parents: Sequence[int] | None = None, all_logits: bool = True) -> torch.Tensor:
        self.forward_passes += 1
        self._dirty = True  # until the pass has appended every layer's keys/values
        logits = self.session.feed(tokens, parents, all_logits)
        self._dirty = False
        return logits

    def prefill(self, context_ids: Sequence[int]) -> None:
        self._prefill(context_ids, None)

    def prefill_cached(self, context_ids: Sequence[int], cache: PrefixCache, store: bool = True) -> int:
        """``prefill`` from a copy of the longest prefix ``cache`` holds; on ``close`` the sequence
        is offered to ``cache`` unless ``store`` is False (see ``specdraft.prefix_cache``). Returns the
        tokens restored."""
        cached = self._prefill(context_ids, cache)
        if not store:
            self._prefix_cache = None
        return cached

    def _prefill(self, context_ids: Sequence[int], cache: PrefixCache | None) -> int:
        if not context_ids:
            raise ValueError("the context must hold at least one token")
        if len(self.session) or self._pending is not None:
            raise RuntimeError("prefill() starts a sequence; this target already holds one")
        ids = [int(t) for t in context_ids]
        cached = 0
        if cache is not None and self.session.cache.supports_snapshots:
            self._prefix_cache = cache
            hit = cache.lookup(ids, limit=len(ids) - 1)  # the last token runs: its logits come next
            if hit is not None:
                self.session.cache.restore(hit.entry.state, hit.length)
                cached = hit.length
        self._tokens = ids
        self._next_logits = self._feed(ids[cached:], all_logits=False)[-1]
        self.cached_prompt_tokens = cached
        return cached

    def verify(self, draft: Draft) -> Verification:
        position = self.context_length  # where row 0's token goes
        return Verification.from_logits(self._logits(draft), draft, position, self.chooser)

    def _logits(self, draft: Draft) -> torch.Tensor:
        """``[1 + len(draft), vocab]``: the pending token's row, then one row per draft node."""
        if self._verified_at is not None:
            raise RuntimeError("verify() twice without commit()")
        if self._next_logits is not None:  # first step: the prefill already predicted the next token
            self._verified_at = len(self.session)
            self._draft_tokens = draft.tokens
            if not len(draft):
                return self._next_logits[None]
            return torch.cat([self._next_logits[None], self._feed(draft.tokens, draft.parents)])
        if self._pending is None:
            raise RuntimeError("verify() before prefill()")
        tokens = (self._pending, *draft.tokens)
        parents = (ROOT, *(p + 1 for p in draft.parents))  # draft roots hang off the pending token
        logits = self._feed(tokens, parents)
        self._verified_at = len(self._tokens) + 1  # the pending token went first
        self._tokens.append(self._pending)
        self._draft_tokens = draft.tokens
        return logits

    def commit(self, path: Sequence[int], next_token: int) -> None:
        if self._verified_at is None:
            raise RuntimeError("commit() without verify()")
        # The cache holds [..., (pending), node_0, ..., node_{n-1}]: keep what precedes the nodes + the path.
        self.session.keep(self._verified_at, path)
        self._tokens.extend(self._draft_tokens[i] for i in path)
        self._verified_at = None
        self._next_logits = None
        self._pending = int(next_token)

    def close(self) -> None:
        cache, self._prefix_cache = self._prefix_cache, None
        if cache is not None:
            self._offer(cache)
        self.session = self.model.new_session()  # drops the cache's tensors
        self._tokens = []

    def _offer(self, cache: PrefixCache) -> None:
        """Store the committed sequence in ``cache`` when it is consistent (nothing half-run, no
        verification awaiting its commit). A failure to store never fails the request."""
        length = len(self._tokens)
        if self._dirty or self._verified_at is not None or length != len(self.session) or not cache.wants(self._tokens):
            return
        try:
            layers, nbytes = self.session.cache.snapshot(length)
            cache.insert(self._tokens, layers, nbytes)
        except Exception:  # pragma: no cover - e.g. out of memory while compacting
            log.warning("could not store a prefix of %d tokens", length, exc_info=True)

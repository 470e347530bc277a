"""The transformers backend: a causal LM on CPU or CUDA, its tokenizer, and per-request sessions.

``TransformersModel`` holds the weights and tokenizer, loaded once and shared by every request;
it never holds sequence state. ``TransformersSession`` is one sequence's KV cache with a forward
pass that accepts a token tree (tree attention mask + tree positions). ``TransformersTarget``
implements the ``Target`` protocol on a session. Draft models use sessions too.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Sequence

import torch

from .cost import PassCostProfile
from .draft import ROOT, Draft
from .kv_cache import KVCache

DEFAULT_MODEL = "smollm2-135m"
_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass(frozen=True)
class ModelConfig:
    """Which model to load and where. ``model``: a registry name, a local path or a hub id.
    ``device``: "auto" (CUDA when available), "cpu" or "cuda[:N]". ``dtype``: "auto" (float32),
    "float32", "bfloat16" or "float16".

    Why float32 by default, on CUDA too: speculative output equals plain decoding's token for token
    only when a pass over k tokens gives the same logits as k one-token passes. In float32 the two
    differ by rounding far below any logit gap that matters; in bfloat16/float16 GPU kernels chosen
    by pass width round differently, and a near-tie can flip (scripts/cuda_check.py on an H100: in
    bfloat16, 3 of 4 random-model trials diverged from plain decoding, none in float32). Choose
    bfloat16 explicitly to trade that guarantee for memory; transformers' own speculation has the
    same property."""

    model: str = DEFAULT_MODEL
    device: str = "auto"
    dtype: str = "auto"

    def __post_init__(self) -> None:
        if self.dtype not in ("auto", *_DTYPES):
            raise ValueError(f"dtype must be auto or one of {sorted(_DTYPES)}, got {self.dtype!r}")
        if not (self.device in ("auto", "cpu") or self.device.startswith("cuda")):
            raise ValueError(f"device must be auto, cpu or cuda[:N], got {self.device!r}")

    def resolved_device(self) -> torch.device:
        if self.device == "auto":
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        return torch.device(self.device)

    def resolved_dtype(self) -> torch.dtype:
        if self.dtype == "auto":
            return torch.float32  # lossless on every device; see the class docstring
        return _DTYPES[self.dtype]


class TransformersModel:
    """A loaded causal LM + tokenizer. Thread-safe: forward passes are serialised by a lock."""

    def __init__(self, hf_model, tokenizer, name: str = "model") -> None:
        self.hf_model = hf_model.eval()
        self.tokenizer = tokenizer
        self.name = name
        self.cost = PassCostProfile()
        self._lock = threading.Lock()

    @classmethod
    def load(cls, config: ModelConfig = ModelConfig()) -> "TransformersModel":
        """Load ``config.model`` (registry names are converted once and cached; see specdraft.models)."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from .models import resolve_checkpoint

        path = resolve_checkpoint(config.model)
        hf_model = AutoModelForCausalLM.from_pretrained(path, dtype=config.resolved_dtype())
        hf_model.to(config.resolved_device())
        return cls(hf_model, AutoTokenizer.from_pretrained(path), name=config.model)

    # --- facts --------------------------------------------------------------------------------
    @property
    def device(self) -> torch.device:
        return self.hf_model.device

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
        if self.tokenizer.eos_token_id is not None:
            ids.add(self.tokenizer.eos_token_id)
        return frozenset(ids)

    # --- text ---------------------------------------------------------------------------------
    @property
    def has_chat_template(self) -> bool:
        return bool(getattr(self.tokenizer, "chat_template", None))

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=True).input_ids)

    def encode_chat(self, messages: Sequence[dict]) -> list[int]:
        """Token ids of ``messages`` wrapped in the model's chat template, ready for the answer."""
        if not self.has_chat_template:
            raise ValueError(f"{self.name} has no chat template")
        text = self.tokenizer.apply_chat_template(list(messages), add_generation_prompt=True, tokenize=False)
        return list(self.tokenizer(text, add_special_tokens=False).input_ids)

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)

    # --- compute ------------------------------------------------------------------------------
    def forward(
        self,
        cache: KVCache,
        tokens: Sequence[int],
        positions: Sequence[int] | None = None,
        tree_mask: torch.Tensor | None = None,
        all_logits: bool = True,
    ) -> torch.Tensor:
        """Run ``tokens`` after what ``cache`` holds, appending their keys/values to it.

        ``positions``/``tree_mask`` (bool ``[q, q]``, True = may attend) describe a token tree;
        None means an ordinary causal chain. Returns logits ``[q, vocab]`` (or ``[1, vocab]`` for
        the last token when ``all_logits`` is False), float32 on the model's device.
        """
        past = len(cache)
        q = len(tokens)
        device = self.device
        input_ids = torch.tensor([list(tokens)], dtype=torch.long, device=device)
        kwargs = {}
        if tree_mask is not None:
            allowed = torch.cat([torch.ones(q, past, dtype=torch.bool), tree_mask.cpu()], dim=1)
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

    def new_target(self) -> "TransformersTarget":
        return TransformersTarget(self)


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

    def __init__(self, model: TransformersModel) -> None:
        self.model = model
        self.session = model.new_session()
        self._pending: int | None = None  # the last committed token, not yet in the cache
        self._next_logits: torch.Tensor | None = None  # [vocab] after the prefill, before any verify
        self._verified_at: int | None = None  # cache index of the first draft node being verified
        self.forward_passes = 0

    @property
    def context_length(self) -> int:
        return len(self.session) + (self._pending is not None)

    @property
    def max_length(self) -> int:
        return self.model.max_length

    def _feed(self, tokens: Sequence[int], parents: Sequence[int] | None = None, all_logits: bool = True) -> torch.Tensor:
        self.forward_passes += 1
        return self.session.feed(tokens, parents, all_logits)

    def prefill(self, context_ids: Sequence[int]) -> None:
        if not context_ids:
            raise ValueError("the context must hold at least one token")
        if len(self.session) or self._pending is not None:
            raise RuntimeError("prefill() starts a sequence; this target already holds one")
        self._next_logits = self._feed(context_ids, all_logits=False)[-1]

    def verify(self, draft: Draft) -> torch.Tensor:
        if self._verified_at is not None:
            raise RuntimeError("verify() twice without commit()")
        if self._next_logits is not None:  # first step: the prefill already predicted the next token
            self._verified_at = len(self.session)
            if not len(draft):
                return self._next_logits[None]
            return torch.cat([self._next_logits[None], self._feed(draft.tokens, draft.parents)])
        if self._pending is None:
            raise RuntimeError("verify() before prefill()")
        self._verified_at = len(self.session) + 1  # the pending token goes first
        tokens = (self._pending, *draft.tokens)
        parents = (ROOT, *(p + 1 for p in draft.parents))  # draft roots hang off the pending token
        return self._feed(tokens, parents)

    def commit(self, path: Sequence[int], next_token: int) -> None:
        if self._verified_at is None:
            raise RuntimeError("commit() without verify()")
        # The cache holds [..., (pending), node_0, ..., node_{n-1}]: keep what precedes the nodes + the path.
        self.session.keep(self._verified_at, path)
        self._verified_at = None
        self._next_logits = None
        self._pending = int(next_token)

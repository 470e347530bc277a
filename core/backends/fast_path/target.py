"""The GPU fast path of the transformers backend: static KV caches and width-bucketed verify passes.

``FastPathModel`` wraps a loaded ``TransformersModel`` (the same weights, tokenizer and forward-pass
lock) and hands out ``FastPathTarget``s whose sessions (``StaticSession``) keep their keys and values
in a preallocated ``StaticKV`` (``specdraft.backends.fast_path.static_kv``) instead of a growing
``DynamicCache``. A verification pass of q tokens is padded to the smallest bucket >= q
(``FastPathConfig.buckets``); on CUDA each (cache, bucket) pass is captured once as a CUDA graph and
replayed, so a pass costs the GPU's work instead of thousands of kernel launches from Python. On a
CPU the same code runs eagerly. Prefills (and drafts wider than the largest bucket) run eagerly,
unpadded, in chunks of ``prefill_chunk`` tokens.

Contracts:

- **Same output.** Every kept row is computed from the same tokens at the same positions with the same
  visible keys as on ``TransformersTarget``; masked slots get a zero weight, padding rows come after
  every real row and no real row attends to them. In float32/float64 the logits agree with the plain
  target's to rounding (the conformance suite asserts tokens == and float64 logits within 1e-9).
- **Rollback moves the valid length** (no copy); a tree's accepted path is gathered into place.
- **Capacity.** A session's cache holds ``max(min_capacity, next power of two >= length + headroom)``
  positions, at most the model's ``max_length``; a sequence that outgrows it moves to a larger cache
  (one copy, and that cache's graphs are captured anew). Closed targets return their cache, graphs
  included, to a per-model pool of ``pool_size`` caches, so the next request replays them.
- **Opt-in.** ``--backend fast-path`` (alias ``--fast-path``), ``ModelConfig(backend="fast-path")``; float32 stays the
  default dtype. Architectures with sliding-window layers are refused (``ValueError``).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import NoReturn, Sequence

import torch

from ...draft import Draft
from ...model_config import ModelConfig
from ...sampling import TokenChooser
from ..transformers.model import TransformersModel, TransformersTarget
from .static_kv import LayerState, StaticKV, supports_static_cache


@dataclass(frozen=True)
class FastPathConfig:
    """``buckets``: the pass widths (ascending); a verification of q tokens runs at the smallest
    bucket >= q, wider ones eagerly. ``graphs``: capture CUDA graphs on a CUDA device (False: eager
    there too, for comparison). ``min_capacity``/``headroom``: a new cache's size (see the module
    doc). ``prefill_chunk``: most tokens of one eager prefill pass (bounds its ``[n, capacity]``
    mask). ``pool_size``: closed caches kept per model, with their graphs."""

    buckets: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128)
    graphs: bool = True
    min_capacity: int = 1024
    headroom: int = 512
    prefill_chunk: int = 512
    pool_size: int = 2

    def __post_init__(self) -> None:
        if not self.buckets or list(self.buckets) != sorted(set(self.buckets)) or self.buckets[0] < 1:
            raise ValueError(f"buckets must be ascending distinct widths >= 1, got {self.buckets}")
        if self.min_capacity < 1 or self.headroom < 0 or self.prefill_chunk < 1 or self.pool_size < 0:
            raise ValueError("min_capacity and prefill_chunk must be >= 1, headroom and pool_size >= 0")

    def bucket(self, width: int) -> int | None:
        """The smallest bucket holding ``width`` tokens, None when it is wider than every bucket."""
        return next((b for b in self.buckets if b >= width), None)


class FastPathModel(TransformersModel):
    """``base``'s weights and tokenizer with static-cache, bucketed (CUDA-graph) targets and sessions."""

    def __init__(self, base: TransformersModel, config: FastPathConfig = FastPathConfig()) -> None:
        if not supports_static_cache(base.hf_model.config):
            raise ValueError(f"the fast path needs full-attention layers; {base.name} has others (sliding window?)")
        super().__init__(base.hf_model, base.hf_tokenizer, name=base.name)
        self._lock = base._lock  # one forward pass at a time on the shared weights
        self.base = base
        self.config = config
        self._free: list[StaticKV] = []
        self._pool_lock = threading.Lock()

    @classmethod
    def load(cls, config: ModelConfig = ModelConfig(), fast: FastPathConfig = FastPathConfig()) -> "FastPathModel":
        """``TransformersModel.load(config)`` on the fast path (``config.backend`` is not read)."""
        return cls(TransformersModel.load(config), fast)

    @property
    def uses_graphs(self) -> bool:
        return self.config.graphs and self.device.type == "cuda"

    def new_session(self) -> "StaticSession":
        return StaticSession(self)

    def new_target(self, chooser: TokenChooser = TokenChooser()) -> "FastPathTarget":
        return FastPathTarget(self, chooser)

    def enable_verify_batching(self, config: object = None) -> NoReturn:
        raise ValueError(
            "verify batching (--batch-verify) and the fast path (--fast-path) do not combine: the fast path's static "
            "caches run alone"
        )

    # --- cache pool ---------------------------------------------------------------------------
    def capacity_for(self, needed: int) -> int:
        config = self.config
        size = max(config.min_capacity, needed + config.headroom)
        size = min(1 << (size - 1).bit_length(), self.max_length)
        if size < needed:
            raise ValueError(f"{needed} positions exceed {self.name}'s context of {self.max_length}")
        return size

    def acquire(self, needed: int) -> StaticKV:
        """A cache with room for ``needed`` positions, empty: a pooled one (its graphs captured) when one fits."""
        with self._pool_lock:
            fitting = sorted((kv for kv in self._free if kv.capacity >= needed), key=lambda kv: kv.capacity)
            if fitting:
                self._free.remove(fitting[0])
                fitting[0].valid = 0
                return fitting[0]
        return StaticKV(self.hf_model, self.capacity_for(needed), self.config.graphs)

    def release(self, kv: StaticKV) -> None:
        """Keep ``kv`` for a later request; a full pool keeps its largest caches (they fit most)."""
        with self._pool_lock:
            if any(kv is free for free in self._free) or not self.config.pool_size:
                return
            if len(self._free) >= self.config.pool_size:
                smallest = min(self._free, key=lambda free: free.capacity)
                if smallest.capacity >= kv.capacity:
                    return
                self._free.remove(smallest)
            kv.valid = 0
            self._free.append(kv)

    @property
    def pooled(self) -> int:
        return len(self._free)


class StaticSession:
    """One sequence on a ``FastPathModel``: ``TransformersSession``'s calls over a ``StaticKV``
    (allocated at the first pass). It is also its own ``cache`` for the prefix cache
    (``supports_snapshots``/``snapshot``/``restore``, in ``KVCache``'s snapshot format)."""

    supports_snapshots = True

    def __init__(self, model: FastPathModel) -> None:
        self.model = model
        self.kv: StaticKV | None = None

    @property
    def cache(self) -> "StaticSession":
        return self

    def __len__(self) -> int:
        return 0 if self.kv is None else self.kv.valid

    def _ensure(self, needed: int) -> StaticKV:
        kv = self.kv
        if kv is None:
            kv = self.kv = self.model.acquire(needed)
        elif kv.capacity < needed:
            larger = self.model.acquire(needed)
            larger.copy_from(kv)
            self.model.release(kv)
            kv = self.kv = larger
        return kv

    def feed(
        self, tokens: Sequence[int], parents: Sequence[int] | None = None, all_logits: bool = True
    ) -> torch.Tensor:
        """As ``TransformersSession.feed``: logits ``[len(tokens), vocab]`` (the last row only when
        not ``all_logits``); the cache grows by ``len(tokens)``."""
        tokens = [int(t) for t in tokens]
        if not tokens:
            raise ValueError("feed() needs at least one token")
        past = len(self)
        tree = None
        if parents is None or all(p == i - 1 for i, p in enumerate(parents)):
            positions = list(range(past, past + len(tokens)))
        else:
            draft = Draft(tuple(tokens), tuple(parents))
            positions = [past + depth - 1 for depth in draft.depths]
            tree = draft.ancestor_mask()
        if not all_logits:
            return self._prefill(tokens, positions, tree)
        q = len(tokens)
        width = self.model.config.bucket(q)
        if width is not None and past + width > self.model.max_length:
            width = None  # no room for the padding at the very end of the context: run q exactly
        kv = self._ensure(past + (width or q))
        with self.model._lock:
            start = time.perf_counter()
            logits = kv.run(tokens, positions, tree, width)
            if kv.device.type == "cuda":
                torch.cuda.synchronize(kv.device)
            self.model.cost.record(q, time.perf_counter() - start)
        return logits

    def _prefill(self, tokens: list[int], positions: list[int], tree) -> torch.Tensor:
        chunk = len(tokens) if tree is not None else self.model.config.prefill_chunk
        kv = self._ensure(len(self) + len(tokens))
        logits = None
        with self.model._lock:
            for i in range(0, len(tokens), chunk):
                logits = kv.run(tokens[i : i + chunk], positions[i : i + chunk], tree, None, all_logits=False)
        if logits is None:  # feed refuses an empty list before it gets here
            raise ValueError("feed() needs at least one token")
        return logits

    def truncate(self, length: int) -> None:
        if self.kv is None:
            if length:
                raise ValueError(f"cannot truncate an empty cache to {length}")
            return
        self.kv.truncate(length)

    def keep(self, start: int, offsets: Sequence[int]) -> None:
        if self.kv is None:
            raise ValueError("keep() on an empty cache")
        self.kv.keep(start, offsets)

    def snapshot(self, length: int) -> tuple[tuple[LayerState, ...], int]:
        if self.kv is None:
            raise ValueError("snapshot() of an empty cache")
        return self.kv.snapshot(length)

    def restore(self, layers: Sequence[LayerState], length: int) -> None:
        if len(self):
            raise ValueError("restore() needs an empty cache")
        self._ensure(length).restore(layers, length)

    def close(self) -> None:
        """Return the cache (and its graphs) to the model's pool."""
        kv, self.kv = self.kv, None
        if kv is not None:
            self.model.release(kv)


class FastPathTarget(TransformersTarget):
    """``TransformersTarget`` on a ``StaticSession``: the same protocol, prefix cache included (``close``
    offers the sequence to the prefix cache first, then returns the session's cache to the pool)."""

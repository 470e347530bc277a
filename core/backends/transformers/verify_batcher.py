"""VerifyBatcher: several requests' verification passes on one transformers model as ONE padded forward.

Opt-in (``TransformersModel.enable_verify_batching(VerifyBatchConfig())``, ``specdraft serve --batch-verify``).
Once attached, ``TransformersModel.forward`` hands every verification-shaped pass (``all_logits``) on
a plain ``KVCache`` (full-attention ``DynamicLayer``s, ``supports_snapshots``, at least one cached
position) to ``VerifyBatcher.forward``; prefills, sliding-window caches and the fast path's static
sessions never come here and run alone as before.

Contracts:

- **Grouping**: the first waiting call leads; it waits at most ``window_ms`` after its own arrival
  for other sequences' calls, and not at all when no other sequence has passed here within
  ``active_ms`` and still exists (a lone request pays nothing: a finished request's cache is freed
  and forgotten, held only by a weak reference here), nor once ``max_batch`` calls, or as many calls as
  sequences recently active, are waiting. Calls that arrive while a batch runs wait for the next one.
- **One pass**: the leader stacks the rows' caches per layer (keys/values left-padded to the longest
  past), right-pads the new tokens, gives per-row position ids and a 4-D float mask: a real query sees
  its own past (never the padding) and its own chain (causal) or tree (``tree_mask``); a padding query
  sees only its own key, so no softmax row is empty. One ``hf_model`` call under the model's lock.
- **Split**: each row's cache gets exactly its own new keys/values appended (``DynamicLayer.update``,
  the same concatenation a lone pass does), and its caller gets its own ``[q, vocab]`` float32 logits.
  Nothing is written to a row's cache before the batched forward has succeeded.
- **Failures**: a call whose tokens / positions / mask do not fit the model runs alone (and raises its
  own error); if the batched forward itself raises, every row is run alone, so each caller gets its
  own result or error and no other row's cache is touched twice.
- **Cost**: batched passes are NOT recorded in ``model.cost`` (``PassCostProfile``): the profile stays
  the cost of a lone pass by width, which is what the draft-length policy compares, and lone passes
  (including every pass of a request that runs alone) keep recording as before.
- **Exactness**: in float64 a batched row equals its lone pass to rounding (tests assert identical
  outputs). In float32 a padded batch can round differently from a lone pass (longer softmax rows,
  other GEMM blocking), so greedy output under batching may differ from the lone output where two
  logits are within rounding; that is why batching is off by default (see docs/deployment.md, "Batching verify passes
  across requests").
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from typing import Any, Protocol, Sequence

import torch
from transformers import DynamicCache

from .kv_cache import KVCache, kv_layers, layer_kv
from .verify_batch_config import VerifyBatchConfig

__all__ = ["BatchedModel", "VerifyBatchConfig", "VerifyBatcher"]

log = logging.getLogger(__name__)


class BatchedModel(Protocol):
    """What the batcher needs of its model (``TransformersModel``, which owns its batcher)."""

    hf_model: Any
    _lock: threading.Lock  # the model's forward-pass lock

    @property
    def device(self) -> torch.device: ...

    def forward_alone(
        self,
        cache: KVCache,
        tokens: Sequence[int],
        positions: Sequence[int] | None = None,
        tree_mask: Any = None,
        all_logits: bool = True,
    ) -> torch.Tensor: ...


class _Call:
    """One caller's pass, waiting for its batch."""

    __slots__ = ("cache", "tokens", "positions", "tree_mask", "arrived", "done", "logits", "error")

    def __init__(self, cache: KVCache, tokens: list[int], positions, tree_mask) -> None:
        self.cache, self.tokens, self.positions, self.tree_mask = cache, tokens, positions, tree_mask
        self.arrived = time.monotonic()
        self.done = False
        self.logits: torch.Tensor | None = None
        self.error: BaseException | None = None

    def result(self) -> torch.Tensor:
        if self.error is not None:
            raise self.error
        assert self.logits is not None
        return self.logits


class VerifyBatcher:
    """Groups concurrent verification passes of one ``TransformersModel`` (thread-safe)."""

    def __init__(self, model: BatchedModel, config: VerifyBatchConfig = VerifyBatchConfig()) -> None:
        self.model = model
        self.config = config
        self._cond = threading.Condition()
        self._queue: list[_Call] = []
        self._leading = False
        self._seen: dict[int, tuple[weakref.ref, float]] = {}  # id(cache) -> (the cache, when it last passed here)
        self.batched_passes = 0  # forwards over two rows or more
        self.batched_rows = 0  # rows those forwards carried
        self.lone_passes = 0  # calls that ran alone (no partner, or refused by the batch)

    def accepts(self, cache) -> bool:
        """Whether a pass on ``cache`` may be batched (a non-empty plain ``KVCache``)."""
        return isinstance(cache, KVCache) and len(cache) > 0 and cache.supports_snapshots

    def note_active(self, cache: KVCache, when: float | None = None) -> None:
        """(Holding the condition, or before any pass.) ``cache``'s sequence counts as active from
        ``when`` (monotonic; default now) for ``active_ms``, or until the cache is freed."""
        self._seen[id(cache)] = (weakref.ref(cache), time.monotonic() if when is None else when)

    def stats(self) -> dict[str, int]:
        return {
            "batched_passes": self.batched_passes,
            "batched_rows": self.batched_rows,
            "lone_passes": self.lone_passes,
        }

    def forward(self, cache: KVCache, tokens: Sequence[int], positions=None, tree_mask=None) -> torch.Tensor:
        """``TransformersModel.forward``'s contract for one verification pass, possibly in a batch."""
        call = _Call(cache, [int(t) for t in tokens], positions, tree_mask)
        with self._cond:
            self.note_active(cache, call.arrived)
            self._queue.append(call)
            self._cond.notify_all()
            while not call.done and self._leading:
                self._cond.wait()
            if call.done:
                return call.result()
            self._leading = True
            try:
                batch = self._gather(call)
            except BaseException:  # e.g. interrupted while waiting: hand the lead on
                self._queue.remove(call)
                self._leading = False
                self._cond.notify_all()
                raise
        try:
            self._run(batch)
        finally:
            with self._cond:
                for member in batch:
                    member.done = True
                self._leading = False
                self._cond.notify_all()
        return call.result()

    def _gather(self, leader: _Call) -> list[_Call]:
        """(Holding the condition.) Wait for partners as the contract says; take the batch off the queue."""
        deadline = leader.arrived + self.config.window_ms / 1000
        while True:
            now = time.monotonic()
            horizon = now - self.config.active_ms / 1000
            for key in [k for k, (ref, t) in self._seen.items() if t < horizon or ref() is None]:
                del self._seen[key]  # gone quiet, or its request has ended (the cache was freed)
            wanted = min(self.config.max_batch, len(self._seen))
            if len(self._queue) >= wanted or now >= deadline:
                break
            self._cond.wait(deadline - now)
        self._queue.remove(leader)
        others = self._queue[: self.config.max_batch - 1]
        del self._queue[: len(others)]
        return [leader, *others]

    # --- running ------------------------------------------------------------------------------
    def _alone(self, call: _Call) -> None:
        self.lone_passes += 1
        try:
            call.logits = self.model.forward_alone(call.cache, call.tokens, call.positions, call.tree_mask, True)
        except Exception as error:  # the caller's own error
            call.error = error

    def _fits(self, call: _Call) -> bool:
        vocab = self.model.hf_model.get_input_embeddings().num_embeddings
        q = len(call.tokens)
        if not q or min(call.tokens) < 0 or max(call.tokens) >= vocab:
            return False
        if (call.positions is None) != (call.tree_mask is None):
            return False
        if call.tree_mask is not None:
            mask = torch.as_tensor(call.tree_mask)
            if len(call.positions) != q or tuple(mask.shape) != (q, q) or mask.dtype != torch.bool:
                return False
        return self.accepts(call.cache)

    def _run(self, batch: list[_Call]) -> None:
        rows = [call for call in batch if self._fits(call)]
        for call in batch:
            if call not in rows:
                self._alone(call)
        if len(rows) == 1:
            self._alone(rows[0])
        elif rows:
            try:
                new_layers, logits = self._forward(rows)
            except Exception:
                log.warning(
                    "a batched verify pass of %d rows failed; running them one by one", len(rows), exc_info=True
                )
                for call in rows:
                    self._alone(call)
                return
            self.batched_passes += 1
            self.batched_rows += len(rows)
            past = max(len(call.cache) for call in rows)
            for i, call in enumerate(rows):
                q = len(call.tokens)
                try:
                    for own, (keys, values) in zip(kv_layers(call.cache.cache), new_layers):
                        own.update(keys[i : i + 1, :, past : past + q], values[i : i + 1, :, past : past + q])
                    call.logits = logits[i, :q]
                except Exception as error:  # pragma: no cover - e.g. out of memory while appending
                    call.error = error

    def _forward(self, rows: list[_Call]) -> tuple[list[tuple[torch.Tensor, torch.Tensor]], torch.Tensor]:
        """The one padded pass: (per layer the batch's keys/values after it, logits ``[B, Q, vocab]``)."""
        model = self.model
        hf = model.hf_model
        device, dtype = model.device, hf.dtype
        pasts = [len(call.cache) for call in rows]
        widths = [len(call.tokens) for call in rows]
        b, past, q = len(rows), max(pasts), max(widths)
        input_ids = torch.zeros(b, q, dtype=torch.long)
        position_ids = torch.tensor(pasts, dtype=torch.long)[:, None] + torch.arange(q)[None]
        allowed = torch.zeros(b, q, past + q, dtype=torch.bool)
        allowed[:, torch.arange(q), past + torch.arange(q)] = True  # padding queries: their own key only
        causal = torch.ones(q, q, dtype=torch.bool).tril()
        for i, call in enumerate(rows):
            n = widths[i]
            input_ids[i, :n] = torch.tensor(call.tokens)
            allowed[i, :n, past - pasts[i] : past] = True
            if call.tree_mask is None:
                allowed[i, :n, past : past + n] = causal[:n, :n]
            else:
                allowed[i, :n, past : past + n] = torch.as_tensor(call.tree_mask)
                position_ids[i, :n] = torch.tensor(list(call.positions), dtype=torch.long)
        bias = torch.zeros(allowed.shape, dtype=dtype)
        bias.masked_fill_(~allowed, torch.finfo(dtype).min)
        stacked = DynamicCache(config=hf.config)
        for index, layer in enumerate(kv_layers(stacked)):
            sources = [layer_kv(kv_layers(call.cache.cache)[index]) for call in rows]
            first_keys, first_values = sources[0]
            keys = first_keys.new_zeros(b, first_keys.shape[1], past, first_keys.shape[3])
            values = first_values.new_zeros(b, first_values.shape[1], past, first_values.shape[3])
            for i, (source_keys, source_values) in enumerate(sources):
                keys[i, :, past - pasts[i] :] = source_keys[0]
                values[i, :, past - pasts[i] :] = source_values[0]
            layer.lazy_initialization(keys, values)
            layer.keys, layer.values = keys, values
        with model._lock, torch.inference_mode():
            out = hf(
                input_ids=input_ids.to(device),
                past_key_values=stacked,
                use_cache=True,
                attention_mask=bias[:, None].to(device),  # [B, 1, Q, past + Q]
                position_ids=position_ids.to(device),
                logits_to_keep=0,
            )
            logits = out.logits.float()
            if device.type == "cuda":
                torch.cuda.synchronize(device)
        return [layer_kv(layer) for layer in kv_layers(stacked)], logits

"""StaticKV: one sequence's keys and values in preallocated tensors, and the bucketed pass over them.

The buffers are a transformers ``StaticCache`` (every layer ``[1, kv_heads, capacity, head_dim]``,
allocated once). The sequence's length is ``valid``: positions ``[0, valid)`` hold it, slots after
it are garbage that no query may attend to. So

- **rollback moves ``valid``** (a rejected chain: no copy); keeping the accepted path of a tree
  gathers only the path's slots into place (a copy of at most the draft's length);
- **a pass writes at ``valid``**: every layer's write position (``cumulative_length``, a device
  tensor) is set from a graph input inside the pass, then the model appends its keys and values;
- **the attention mask is built in the pass** from two inputs, ``valid`` and the ``[w, w]`` tree
  block (True = may attend): a row sees ``[0, valid)`` and its tree ancestors among the new slots,
  never a stale or padded slot.

``BucketRunner`` runs passes of one fixed width ``w`` (a bucket: 1, 2, 4, ... tokens) from static
input tensors (ids, positions, ``valid`` and the tree packed in one int64 tensor, copied to the
device in one transfer) into a static logits output. On CUDA, with graphs enabled, the pass is
captured once in a ``torch.cuda.CUDAGraph`` and replayed; elsewhere the very same function runs
eagerly (which is what the CPU tests exercise). Padding rows (a draft shorter than its bucket)
attend only to the prefix and themselves and sit after every real row, so no real row sees them.

Capturing a graph needs the buffers' addresses fixed: a ``StaticKV`` never reallocates (a target
that outgrows one moves to a larger one, see ``specdraft.backends.fast_path.target``) and keeps its runners
while it lives, so a pooled ``StaticKV`` reuses its graphs across requests.
"""

from __future__ import annotations

from typing import Sequence, cast

import torch
from transformers import StaticCache
from transformers.cache_utils import StaticLayer

from ..transformers.kv_cache import LayerState, layer_kv


def supports_static_cache(hf_config) -> bool:
    """Whether every layer of this architecture is a plain full-attention ``StaticLayer`` (sliding
    windows and linear-attention layers keep other state: not supported here)."""
    try:
        cache = StaticCache(config=hf_config, max_cache_len=8)
    except Exception:  # pragma: no cover - architectures transformers cannot build one for
        return False
    return all(type(layer) is StaticLayer for layer in cache.layers)


class StaticKV:
    """Preallocated keys/values of ``capacity`` positions for ``hf_model`` (see the module doc)."""

    def __init__(self, hf_model, capacity: int, use_graphs: bool) -> None:
        config = hf_model.config
        if not supports_static_cache(config):
            raise ValueError(f"{type(hf_model).__name__} has layers a static cache cannot hold (sliding window?)")
        self.hf_model = hf_model
        self.capacity = int(capacity)
        self.device = hf_model.device
        self.dtype = hf_model.dtype
        self.use_graphs = use_graphs and self.device.type == "cuda"
        self.cache = StaticCache(config=config, max_cache_len=self.capacity)
        heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        with torch.inference_mode():
            self.cache.early_initialization(1, heads, head_dim, self.dtype, self.device)
        # StaticCache builds StaticLayers for every config supports_static_cache accepts (it types them wider)
        self.layers = cast("list[StaticLayer]", list(self.cache.layers))
        self.valid = 0
        self.runners: dict[int, BucketRunner] = {}
        self._graph_pool = torch.cuda.graph_pool_handle() if self.use_graphs else None

    @property
    def nbytes(self) -> int:
        return sum(keys.nbytes + values.nbytes for keys, values in map(layer_kv, self.layers))

    # --- state --------------------------------------------------------------------------------
    def truncate(self, length: int) -> None:
        if not 0 <= length <= self.valid:
            raise ValueError(f"cannot truncate a cache of {self.valid} positions to {length}")
        self.valid = length

    def keep(self, start: int, offsets: Sequence[int]) -> None:
        """Keep ``[0, start)`` then ``start + o`` for each ascending offset (the accepted path)."""
        offsets = list(offsets)
        if offsets == list(range(len(offsets))):
            self.truncate(start + len(offsets))
            return
        if offsets != sorted(offsets) or (offsets and start + offsets[-1] >= self.valid):
            raise ValueError(f"offsets {offsets} are not ascending positions after {start}")
        index = torch.tensor(offsets, device=self.device) + start
        with torch.inference_mode():
            for layer in self.layers:
                for buffer in layer_kv(layer):
                    buffer[:, :, start : start + len(offsets)] = buffer.index_select(2, index)
        self.valid = start + len(offsets)

    def copy_from(self, other: "StaticKV") -> None:
        """Take ``other``'s sequence (this one must be at least as large)."""
        if other.valid:
            self.restore([layer_kv(layer) for layer in other.layers], other.valid)
        self.valid = other.valid

    # --- prefix cache (the snapshot format of ``KVCache``) --------------------------------------
    supports_snapshots = True

    def snapshot(self, length: int) -> tuple[tuple[LayerState, ...], int]:
        if not 0 < length <= self.valid:
            raise ValueError(f"cannot snapshot {length} positions of this cache")
        with torch.inference_mode():
            layers = tuple(
                (keys[:, :, :length].clone(), values[:, :, :length].clone())
                for keys, values in map(layer_kv, self.layers)
            )
        return layers, sum(k.nbytes + v.nbytes for k, v in layers)

    def restore(self, layers: Sequence[LayerState], length: int) -> None:
        """Copy the first ``length`` positions of ``layers`` in (the snapshot is never written to)."""
        if len(layers) != len(self.layers) or not 0 < length <= self.capacity:
            raise ValueError("restore() needs the snapshot's layers and room for its positions")
        with torch.inference_mode():
            for (own_keys, own_values), (keys, values) in zip(map(layer_kv, self.layers), layers):
                if keys.shape[2] < length:
                    raise ValueError(f"a snapshot of {keys.shape[2]} positions has no prefix of {length}")
                own_keys[:, :, :length].copy_(keys[:, :, :length])
                own_values[:, :, :length].copy_(values[:, :, :length])
        self.valid = length

    # --- passes -------------------------------------------------------------------------------
    def run(
        self, tokens: Sequence[int], positions: Sequence[int], tree, width: int | None, all_logits: bool = True
    ) -> torch.Tensor:
        """Run ``tokens`` (at ``positions``; ``tree`` a bool ``[q, q]`` mask or None for a chain)
        after ``valid``. ``width`` (>= q): the bucket, whose runner pads the pass to it (a graph on
        CUDA); None: an eager pass of exactly q tokens (a prefill, a draft wider than every bucket).
        Returns float32 logits ``[q, vocab]`` (``[1, vocab]`` of the last token unless
        ``all_logits``, eager only); ``valid`` grows by q."""
        q = len(tokens)
        if width is not None and (width < q or not all_logits):
            raise ValueError(f"a bucket of {width} cannot run {q} tokens (all_logits={all_logits})")
        span = q if width is None else width
        if self.valid + span > self.capacity:
            raise ValueError(f"a pass of {span} after {self.valid} positions overflows a capacity of {self.capacity}")
        packed = pack_inputs(tokens, positions, tree, self.valid, span)
        if width is None:
            with torch.inference_mode():
                logits = self.step(packed.to(self.device), span, all_logits)
        else:
            runner = self.runners.get(width)
            if runner is None:
                runner = self.runners[width] = BucketRunner(self, width)
            logits = runner.run(packed)[:q].clone()
        self.valid += q
        return logits

    def step(self, packed: torch.Tensor, width: int, all_logits: bool = True) -> torch.Tensor:
        """The pass itself, from packed device inputs: graph-capturable (no host sync, fixed shapes)."""
        ids = packed[:width]
        positions = packed[width : 2 * width]
        valid = packed[2 * width]
        tree = packed[2 * width + 1 :].view(width, width).bool()
        for layer in self.layers:
            layer.cumulative_length.copy_(valid)  # every layer writes its new keys/values at ``valid``
        columns = torch.arange(self.capacity, device=packed.device)
        inside = (columns >= valid) & (columns < valid + width)
        block = tree[:, (columns - valid).clamp(0, width - 1)] & inside[None, :]
        allowed = (columns < valid)[None, :] | block
        bias = torch.zeros(allowed.shape, dtype=self.dtype, device=packed.device)
        bias.masked_fill_(~allowed, torch.finfo(self.dtype).min)
        out = self.hf_model(
            input_ids=ids[None],
            position_ids=positions[None],
            attention_mask=bias[None, None],
            past_key_values=self.cache,
            use_cache=True,
            logits_to_keep=0 if all_logits else 1,
        )
        return out.logits[0].float()


def pack_inputs(tokens: Sequence[int], positions: Sequence[int], tree, valid: int, width: int) -> torch.Tensor:
    """One int64 host tensor: ids ``[width]``, positions ``[width]``, ``valid``, tree ``[width, width]``.
    Padding rows (index >= q) carry token 0 at the last real position + 1 and attend to themselves."""
    q = len(tokens)
    packed = torch.zeros(2 * width + 1 + width * width, dtype=torch.long)
    packed[:q] = torch.as_tensor(list(tokens), dtype=torch.long)
    packed[width : width + q] = torch.as_tensor(list(positions), dtype=torch.long)
    packed[width + q : 2 * width] = (max(positions) + 1) if q else valid
    packed[2 * width] = valid
    block = torch.zeros(width, width, dtype=torch.long)
    if tree is None:
        block[:q, :q] = torch.tril(torch.ones(q, q, dtype=torch.long))
    else:
        block[:q, :q] = torch.as_tensor(tree).long()
    block[range(q, width), range(q, width)] = 1
    packed[2 * width + 1 :] = block.flatten()
    return packed


class BucketRunner:
    """Passes of one width over one ``StaticKV`` from static inputs; a CUDA graph where enabled."""

    def __init__(self, kv: StaticKV, width: int) -> None:
        self.kv = kv
        self.width = width
        self.inputs = torch.zeros(2 * width + 1 + width * width, dtype=torch.long, device=kv.device)
        self.output: torch.Tensor | None = None  # the graph's output buffer, once captured
        self.graph: torch.cuda.CUDAGraph | None = None

    def run(self, packed: torch.Tensor) -> torch.Tensor:
        """Logits ``[width, vocab]`` (a static buffer: overwritten by the next run)."""
        with torch.inference_mode():
            self.inputs.copy_(packed, non_blocking=self.kv.device.type == "cuda")
            if not self.kv.use_graphs:
                return self.kv.step(self.inputs, self.width)
            if self.graph is None:
                self._capture()
            assert self.graph is not None and self.output is not None  # _capture sets both
            self.graph.replay()
            return self.output

    def _capture(self) -> None:  # pragma: no cover - CUDA only; measured by benchmarks/pass_cost.py
        """Warm up on a side stream (writes only slots at and after ``valid``: garbage), then capture.
        The inputs now in ``self.inputs`` are the real ones: the replay that follows computes them."""
        stream = torch.cuda.Stream(self.kv.device)
        stream.wait_stream(torch.cuda.current_stream(self.kv.device))
        with torch.cuda.stream(stream):
            for _ in range(2):
                self.kv.step(self.inputs, self.width)
        torch.cuda.current_stream(self.kv.device).wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        # thread_local: a draft model's eager pass on another thread must not break this capture
        with torch.cuda.graph(graph, pool=self.kv._graph_pool, capture_error_mode="thread_local"):
            self.output = self.kv.step(self.inputs, self.width)
        self.graph = graph

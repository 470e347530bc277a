"""KVCache: the explicit cache state of one sequence, over a transformers ``DynamicCache``.

Each layer holds keys and values of shape ``[batch=1, kv_heads, seq_len, head_dim]``. specdraft
only ever appends (a forward pass), truncates (a rejected chain) or keeps a selection of the last
positions (the accepted path of a tree). Nothing else touches the tensors.

For the prefix cache (``specdraft.prefix_cache``): ``snapshot`` hands out the first positions as
tensors no session writes to again, ``restore`` starts an empty cache from a copy of such a
snapshot's first positions. Both need plain full-attention layers (``supports_snapshots``): a
sliding-window layer keeps only its last positions, whose prefix is not a prefix of the sequence.
"""

from __future__ import annotations

from typing import Sequence, cast

import torch
from transformers import DynamicCache
from transformers.cache_utils import CacheLayerMixin, DynamicLayer

LayerState = tuple[torch.Tensor, torch.Tensor]  # keys, values: [1, kv_heads, positions, head_dim]


def kv_layers(cache: DynamicCache) -> list[DynamicLayer]:
    """``cache.layers`` as what they are for every model specdraft runs: ``DynamicLayer``s (full
    attention, or its sliding-window subclass). transformers types the list wider, with linear-attention
    and placeholder layers, which only other architectures build."""
    return cast("list[DynamicLayer]", cache.layers)


def layer_kv(layer: CacheLayerMixin) -> LayerState:
    """``layer``'s keys and values; ``ValueError`` for a layer that holds none yet (not initialized)."""
    keys, values = layer.keys, layer.values
    if keys is None or values is None:
        raise ValueError("this cache layer holds no keys and values yet")
    return keys, values


class KVCache:
    def __init__(self, config) -> None:
        self.cache = DynamicCache(config=config)

    def __len__(self) -> int:
        return self.cache.get_seq_length()

    def truncate(self, length: int) -> None:
        """Keep the first ``length`` positions."""
        drop = len(self) - length
        if drop < 0:
            raise ValueError(f"cannot truncate a cache of {len(self)} positions to {length}")
        if drop:
            self.cache.crop(-drop)

    def keep(self, start: int, offsets: Sequence[int]) -> None:
        """Keep positions ``[0, start)`` followed by ``start + o`` for each offset (ascending).

        This moves the accepted path of a tree into contiguous positions after ``start``.
        """
        offsets = list(offsets)
        if offsets == list(range(len(offsets))):  # already contiguous: a plain truncation
            self.truncate(start + len(offsets))
            return
        if offsets != sorted(offsets) or (offsets and start + offsets[-1] >= len(self)):
            raise ValueError(f"offsets {offsets} are not ascending positions after {start}")
        for layer in kv_layers(self.cache):
            if not layer.is_initialized:
                continue
            keys, values = layer_kv(layer)
            index = torch.tensor(offsets, device=keys.device) + start
            layer.keys = torch.cat([keys[:, :, :start], keys.index_select(2, index)], dim=2)
            layer.values = torch.cat([values[:, :, :start], values.index_select(2, index)], dim=2)

    # --- prefix cache -------------------------------------------------------------------------
    @property
    def supports_snapshots(self) -> bool:
        return all(type(layer) is DynamicLayer for layer in self.cache.layers)

    def snapshot(self, length: int) -> tuple[tuple[LayerState, ...], int]:
        """(per layer (keys, values) of the first ``length`` positions, their bytes). Call it only
        on a cache that is dropped afterwards (a closing request's): the tensors are handed over,
        compacted into their own storage where they are views of a larger one, never copied twice."""
        if not self.supports_snapshots or not 0 < length <= len(self):
            raise ValueError(f"cannot snapshot {length} positions of this cache")
        layers = tuple(
            (_owned(keys[:, :, :length]), _owned(values[:, :, :length]))
            for keys, values in map(layer_kv, kv_layers(self.cache))
        )
        return layers, sum(k.nbytes + v.nbytes for k, v in layers)

    def restore(self, layers: Sequence[LayerState], length: int) -> None:
        """Fill this empty cache with a copy of the first ``length`` positions of ``layers``
        (``snapshot``'s); the snapshot itself is never written to."""
        if len(self) or not self.supports_snapshots or len(layers) != len(self.cache.layers):
            raise ValueError("restore() needs an empty cache with the snapshot's layers")
        for layer, (keys, values) in zip(kv_layers(self.cache), layers):
            if not 0 < length <= keys.shape[2]:
                raise ValueError(f"a snapshot of {keys.shape[2]} positions has no prefix of {length}")
            layer.update(keys[:, :, :length], values[:, :, :length])  # torch.cat: a copy
            own_keys, own_values = layer_kv(layer)
            if own_keys.untyped_storage().data_ptr() == keys.untyped_storage().data_ptr():  # pragma: no cover
                layer.keys, layer.values = own_keys.clone(), own_values.clone()  # never share a snapshot


def _owned(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` itself when it is contiguous and alone in its storage, else a compact copy (so
    that a stored snapshot's bytes are what it holds, not a larger buffer it is a view of)."""
    if tensor.is_contiguous() and tensor.untyped_storage().nbytes() == tensor.nbytes:
        return tensor
    return tensor.clone(memory_format=torch.contiguous_format)

"""KVCache: the explicit cache state of one sequence, over a transformers ``DynamicCache``.

Each layer holds keys and values of shape ``[batch=1, kv_heads, seq_len, head_dim]``. specdraft
only ever appends (a forward pass), truncates (a rejected chain) or keeps a selection of the last
positions (the accepted path of a tree). Nothing else touches the tensors.
"""

from __future__ import annotations

from typing import Sequence

import torch
from transformers import DynamicCache


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
        for layer in self.cache.layers:
            if not layer.is_initialized:
                continue
            index = torch.tensor(offsets, device=layer.keys.device) + start
            layer.keys = torch.cat([layer.keys[:, :, :start], layer.keys.index_select(2, index)], dim=2)
            layer.values = torch.cat([layer.values[:, :, :start], layer.values.index_select(2, index)], dim=2)

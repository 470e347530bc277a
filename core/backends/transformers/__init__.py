"""The transformers backend: a causal LM on CPU or CUDA, the exact reference (float32 by default).

``model``: ``TransformersModel`` (the ``Model`` protocol), its sessions and ``TransformersTarget``;
``tokenizer``: ``HFTokenizer``; ``kv_cache``: one sequence's cache; ``verify_batcher``: several
requests' verification passes in one padded forward (opt-in), configured by ``verify_batch_config``
(torch-free, for the command line). This package imports nothing on its own, so that reading the
batcher's config needs neither torch nor transformers; its names load on first use.
"""

from typing import Any

_NAMES = {
    "TransformersModel": "model",
    "TransformersSession": "model",
    "TransformersTarget": "model",
    "HFTokenizer": "tokenizer",
    "KVCache": "kv_cache",
}


def __getattr__(name: str) -> Any:  # torch loads on first use
    if name in _NAMES:
        import importlib

        return getattr(importlib.import_module(f".{_NAMES[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = sorted(_NAMES)

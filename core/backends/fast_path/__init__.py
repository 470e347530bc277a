"""The GPU fast path of the transformers backend (opt-in: ``--fast-path``): static KV caches and
width-bucketed verify passes, captured as CUDA graphs on a GPU and run eagerly on a CPU. See
``specdraft.backends.fast_path.target`` for the contracts and docs/backends.md ("GPU fast path")."""

from .static_kv import StaticKV, supports_static_cache
from .target import FastPathConfig, FastPathModel, FastPathTarget, StaticSession

__all__ = ["FastPathConfig", "FastPathModel", "FastPathTarget", "StaticKV", "StaticSession", "supports_static_cache"]

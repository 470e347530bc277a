"""PrefixCache: the KV cache of recent sequences of one model, so that a request starts its prefill
from the longest prefix of its prompt that an earlier request already computed.

A chat's next turn repeats the previous turn's prompt and answer, every grammar request repeats the
same instruction, a fixed system prompt or a repeated set of RAG passages opens many prompts: with
the cache their keys and values are restored instead of recomputed, and only the rest of the prompt
runs through the model.

Contracts:

- **Per model, bounded, LRU.** ``prefix_cache_for(model)`` is the model's one cache (created with
  the default config on first use; ``configure_prefix_cache`` replaces or switches off one model's,
  ``set_default_prefix_cache`` every model's; the command line's ``--no-prefix-cache`` reaches the
  models through ``ModelPool(prefix_cache=...)``, which configures each model it loads).
  Entries are evicted least recently used first until the total is within ``max_bytes`` (and
  ``max_tokens`` when set); an entry larger than the bound alone is never stored. An entry whose
  tokens are a prefix of a new entry's is dropped (the new one serves every lookup it served).
- **Immutable entries.** A stored snapshot is never changed afterwards: a target restoring a prefix
  copies it into its own cache (``KVCache.restore``, ``LlamaSession.restore``), so requests never
  share tensors they write to. A target offers its sequence only when it is consistent (no forward
  pass failed half-way, no verification awaiting its commit): a failed or aborted request cannot
  corrupt the cache.
- **Same output.** A restored prefix holds the keys and values the model computed for those tokens
  at those positions; the rest of the prompt is run after it as a prefill continues a cache. On the
  transformers backend in float32 the output equals uncached output (tests assert ==); on llama.cpp
  see ``Model.exact`` and docs/prefix-cache.md.
- **Thread-safe.** Lookups and inserts take the cache's lock; restoring (a copy) and computing
  happen outside it, so concurrent requests only serialise on the model's own forward-pass lock.

Targets take part through ``Target.prefill_cached`` (declared on the protocol); a target without a
cache of its own here (an engine's) implements it as a miss and prefills everything.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

DEFAULT_MAX_BYTES = 512 * 2**20  # 512 MiB of keys and values per model
DEFAULT_MAX_TOKENS = 0  # 0: no bound in tokens (the bytes bound holds)
DEFAULT_MIN_TOKENS = 16  # shorter prefixes are neither stored nor reused: not worth a copy


@dataclass(frozen=True)
class PrefixCacheConfig:
    """``enabled``: keep and reuse prefixes at all. ``max_bytes``: most bytes of stored keys and
    values (on the model's device). ``max_tokens``: most stored tokens over all entries (0: no
    bound in tokens). ``min_tokens``: shortest sequence stored and shortest prefix reused."""

    enabled: bool = True
    max_bytes: int = DEFAULT_MAX_BYTES
    max_tokens: int = DEFAULT_MAX_TOKENS
    min_tokens: int = DEFAULT_MIN_TOKENS

    def __post_init__(self) -> None:
        if self.max_bytes < 0 or self.max_tokens < 0 or self.min_tokens < 1:
            raise ValueError("need max_bytes >= 0, max_tokens >= 0 and min_tokens >= 1")


@dataclass(frozen=True, eq=False)
class PrefixEntry:
    """One stored sequence: its tokens, the backend's snapshot of their cache (never modified
    once stored) and the snapshot's size in bytes."""

    tokens: np.ndarray  # int64, read-only
    state: Any
    nbytes: int

    def __len__(self) -> int:
        return len(self.tokens)


@dataclass(frozen=True)
class PrefixHit:
    """A lookup's answer: the first ``length`` tokens of ``entry`` are the query's first tokens."""

    entry: PrefixEntry
    length: int


def _tokens(ids: Sequence[int]) -> np.ndarray:
    array = np.asarray(ids, dtype=np.int64)
    array.flags.writeable = False
    return array


def common_prefix(a: np.ndarray, b: np.ndarray) -> int:
    """How many leading tokens ``a`` and ``b`` share."""
    n = min(len(a), len(b))
    differ = np.flatnonzero(a[:n] != b[:n])
    return int(differ[0]) if len(differ) else n


class PrefixCache:
    """Stored sequences of one model, least recently used first (see the module docstring)."""

    def __init__(self, config: PrefixCacheConfig = PrefixCacheConfig()) -> None:
        self.config = config
        self._entries: OrderedDict[int, PrefixEntry] = OrderedDict()
        self._next_id = 0
        self._bytes = 0
        self._tokens = 0
        self._lock = threading.Lock()
        self.lookups = self.hits = self.reused_tokens = self.inserts = self.evictions = 0

    # --- reading ------------------------------------------------------------------------------
    def lookup(self, ids: Sequence[int], limit: int | None = None) -> PrefixHit | None:
        """The entry sharing the longest prefix with ``ids`` (at most ``limit`` tokens of it), or
        None when no entry shares ``min_tokens``. The entry becomes the most recently used."""
        query = _tokens(ids)
        limit = len(query) if limit is None else min(limit, len(query))
        with self._lock:
            self.lookups += 1
            best_key, best = None, 0
            for key, entry in self._entries.items():
                if len(entry) and len(query) and entry.tokens[0] == query[0]:
                    shared = common_prefix(entry.tokens, query[:limit])
                    if shared > best:
                        best_key, best = key, shared
            if best_key is None or best < self.config.min_tokens:
                return None
            self._entries.move_to_end(best_key)
            self.hits += 1
            self.reused_tokens += best
            return PrefixHit(self._entries[best_key], best)

    def wants(self, ids: Sequence[int]) -> bool:
        """Whether ``insert(ids, ...)`` could add something (worth taking a snapshot for): the
        sequence is long enough and no entry holds it already (as itself or as a prefix)."""
        if not self.config.enabled or len(ids) < self.config.min_tokens:
            return False
        query = _tokens(ids)
        with self._lock:
            return not any(
                len(e) >= len(query) and common_prefix(e.tokens, query) == len(query) for e in self._entries.values()
            )

    # --- writing ------------------------------------------------------------------------------
    def insert(self, ids: Sequence[int], state: Any, nbytes: int) -> bool:
        """Store ``state`` (the cache of ``ids``; the caller never touches it again) and evict
        down to the bounds. Returns whether it was stored: not when it is shorter than
        ``min_tokens``, alone exceeds a bound, or an entry already holds ``ids``."""
        tokens = _tokens(ids)
        config = self.config
        if not config.enabled or len(tokens) < config.min_tokens or nbytes > config.max_bytes:
            return False
        if config.max_tokens and len(tokens) > config.max_tokens:
            return False
        with self._lock:
            covered = []
            for key, entry in self._entries.items():
                shared = common_prefix(entry.tokens, tokens)
                if shared == len(tokens) and len(entry) >= len(tokens):
                    self._entries.move_to_end(key)  # already held: touch it
                    return False
                if shared == len(entry):
                    covered.append(key)  # a prefix of the new entry: it serves every such lookup
            for key in covered:
                self._drop(key)
            self._entries[self._next_id] = PrefixEntry(tokens, state, int(nbytes))
            self._next_id += 1
            self._bytes += int(nbytes)
            self._tokens += len(tokens)
            self.inserts += 1
            self._evict()
            return True

    def clear(self) -> None:
        with self._lock:
            for key in list(self._entries):
                self._drop(key)

    def _drop(self, key: int) -> None:
        entry = self._entries.pop(key)
        self._bytes -= entry.nbytes
        self._tokens -= len(entry)

    def _evict(self) -> None:
        config = self.config
        while self._entries and (
            self._bytes > config.max_bytes or (config.max_tokens and self._tokens > config.max_tokens)
        ):
            self._drop(next(iter(self._entries)))
            self.evictions += 1

    # --- facts --------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._entries)

    @property
    def nbytes(self) -> int:
        return self._bytes

    @property
    def tokens(self) -> int:
        return self._tokens

    def stats(self) -> dict:
        """Current size, bounds and counters (for /healthz, /metrics and the benchmark)."""
        with self._lock:
            return {
                "enabled": self.config.enabled,
                "entries": len(self._entries),
                "tokens": self._tokens,
                "bytes": self._bytes,
                "max_bytes": self.config.max_bytes,
                "max_tokens": self.config.max_tokens,
                "lookups": self.lookups,
                "hits": self.hits,
                "reused_tokens": self.reused_tokens,
                "inserts": self.inserts,
                "evictions": self.evictions,
            }


# --- one cache per model -----------------------------------------------------------------------
_by_model: "weakref.WeakKeyDictionary[Any, PrefixCache | None]" = weakref.WeakKeyDictionary()
_registry_lock = threading.Lock()


_default = PrefixCacheConfig()  # what ``prefix_cache_for`` creates a model's cache with


def set_default_prefix_cache(config: PrefixCacheConfig) -> None:
    """Make ``config`` the process's default: every model's cache is replaced by one with ``config``
    (None when it is disabled), and caches created later use it."""
    global _default
    with _registry_lock:
        _default = config
        for model in list(_by_model):
            _by_model[model] = PrefixCache(config) if config.enabled else None


def configure_prefix_cache(model: Any, config: PrefixCacheConfig = PrefixCacheConfig()) -> PrefixCache | None:
    """Give ``model`` a new, empty prefix cache with ``config`` (None, and no caching, when
    ``config.enabled`` is False). Returns it."""
    cache = PrefixCache(config) if config.enabled else None
    with _registry_lock:
        _by_model[model] = cache
    return cache


def prefix_cache_for(model: Any) -> PrefixCache | None:
    """``model``'s prefix cache: created with the default config (``set_default_prefix_cache``) on
    first use; None when caching is switched off or the model cannot be weakly referenced."""
    with _registry_lock:
        try:
            if model not in _by_model:
                _by_model[model] = PrefixCache(_default) if _default.enabled else None
            return _by_model[model]
        except TypeError:  # not weakly referenceable: no cache
            return None

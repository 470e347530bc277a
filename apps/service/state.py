"""ServiceState: what the app's requests share, kept in ``app.extensions["specdraft"]``.

Shared: the config, the ``ModelPool``, the target model (weights and tokenizer only; a model
holds no sequence state), one ``GrammarCorrector`` per model name (it holds no request state
either), the ``IndexStore`` of named document indexes (see ``rag_indexes`` for how adds stay
isolated) and the read-only REST datastore. Never shared: KV caches and drafters. Every request gets a fresh drafter
from ``drafter()`` and a fresh target session from the generator, so concurrent requests cannot see
each other's state.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Hashable, Sequence

from flask import current_app

from specdraft import Drafter, Model, SamplingParams, SpeculationConfig
from specdraft.apps.model_pool import ModelPool
from specdraft.copydraft import CorrectorConfig, EditorConfig, GrammarCorrector
from specdraft.models import ChecksumMismatchError, ModelNotInstalledError
from specdraft.retrieval.datastore import Datastore
from specdraft.retrieval.drafter_registry import DATASTORE, PASSAGES, DrafterSpec, check_datastore
from specdraft.retrieval.embedder import Embedder, EmbedderConfig, TextEmbedder
from specdraft.retrieval.prompt_passages import prompt_passages

from .config import ServiceConfig
from .protocol.errors import RequestError, as_request_error
from .protocol.grammar import check_model_allowed
from .rag_indexes import IndexStore

if TYPE_CHECKING:
    from specdraft.backends.transformers.verify_batcher import VerifyBatcher
    from specdraft.retrieval.stores import StoreRetriever

EXTENSION = "specdraft"

# What loading a draft model a request named may raise when the name is bad: an unknown name or
# path, a missing hub id, a registry model that is not installed, a tokenizer unlike the target's.
_DRAFT_MODEL_ERRORS = (ValueError, OSError, ModelNotInstalledError, ChecksumMismatchError)


class ServiceState:
    """The config, the pool, and the target model, loaded on first use, once (thread-safe)."""

    def __init__(self, config: ServiceConfig, pool: ModelPool, embedder: TextEmbedder | None = None) -> None:
        self.config = config
        self.pool = pool
        self._embedder = embedder  # None: config.embedding_model, loaded on first use
        self.started = int(time.time())  # Unix time the app was created (OpenAI's model "created")
        self.verify_batcher: "VerifyBatcher | None" = None  # the target's, with config.batch_verify (once loaded)
        self._kept: dict[Hashable, Any] = {}  # what ``once`` made: "target", ("store", name), ("prepared", spec), ...
        self._locks: dict[Hashable, threading.Lock] = {}  # one per key of ``_kept``
        self._lock = threading.Lock()  # guards ``_locks``
        self._store_lock = threading.Lock()

    def once(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """The value kept under ``key``, made by ``make()`` on first use, once (thread-safe: a key's
        value is made under the key's own lock, so making one may use another; a ``make`` that
        raises keeps nothing, and a later call tries again)."""
        if key in self._kept:
            return self._kept[key]
        with self._lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._kept:
                self._kept[key] = make()
            return self._kept[key]

    @property
    def loaded(self) -> bool:
        """Whether the target model has been loaded (requests load it; health checks do not)."""
        return "target" in self._kept

    def target(self) -> Model:
        """The served model, loading it on the first call; later calls return the same instance."""
        return self.once("target", self._load_target)

    def _load_target(self) -> Model:
        target = self.pool.get(self.config.model_name)
        if self.config.batch_verify is not None:  # ServiceConfig checked the backend
            from specdraft.backends.transformers.model import enable_verify_batching

            self.verify_batcher = enable_verify_batching(target, self.config.batch_verify)
        return target

    def model(self, name: str) -> Model:
        """The served model or an allowed extra model, loaded on first use (thread-safe: the pool's).

        Raises ``RequestError`` (param "model") for a name the config does not allow or a model
        that fails to load (not installed, no such path, ...).
        """
        if name == self.config.model_name:
            return self.target()
        check_model_allowed(name, self.config)
        with as_request_error("model", *_DRAFT_MODEL_ERRORS, prefix=f"cannot load model {name!r}: "):
            return self.pool.get(name)

    def corrector(self, name: str) -> GrammarCorrector:
        """The ``GrammarCorrector`` for model ``name`` (see ``model``), built once per name."""
        return self.once(("corrector", name), lambda: GrammarCorrector(self.model(name), self._corrector_config()))

    def _corrector_config(self) -> CorrectorConfig:
        speculation = EditorConfig(speculation=self.config.grammar_speculation)
        return CorrectorConfig(max_text_chars=self.config.max_grammar_chars, editor=speculation)

    def indexes(self) -> IndexStore:
        """The named document indexes (no embedding model is loaded until one is used)."""
        return self.once("indexes", lambda: IndexStore(self.config.index_root, self._embedder or self._new_embedder()))

    def _new_embedder(self) -> Embedder:
        return Embedder(EmbedderConfig(model=self.config.embedding_model))

    def store(self, name: str) -> "StoreRetriever":
        """The vector store collection ``name`` of ``config.stores``, opened on first use with the
        indexes' embedder and kept (searches never change it). ``StoreError`` (a ValueError) when it
        cannot be opened (no such collection, a missing extra); a later call tries again."""
        from specdraft.retrieval.stores import open_store

        config = self.config.store(name)
        if config is None:
            raise KeyError(name)

        def open_it() -> StoreRetriever:
            with self._store_lock:  # one store opened at a time
                return open_store(config, self.indexes().embedder)

        return self.once(("store", name), open_it)

    def datastore(self) -> Datastore | None:
        """The configured REST datastore, opened (memory-mapped) on first use; None when there is none."""
        if self.config.datastore is None:
            return None
        return self.once("datastore", lambda: Datastore.load(self.config.datastore))

    def speculation(self, spec: DrafterSpec) -> SpeculationConfig:
        """The draft-length policy of a completion with drafter ``spec``: the RAG answers' one
        (``rag_speculation``: long quoted drafts) for the drafters that copy retrieved text (the
        reference drafter over the prompt's passages, the datastore drafters); ``speculation`` for the others."""
        return self.config.rag_speculation if spec.needs & {PASSAGES, DATASTORE} else self.config.speculation

    def drafter(
        self, spec: DrafterSpec, sampling: SamplingParams, seed: int | None, prompt_texts: Sequence[str] = ()
    ) -> Drafter | None:
        """A fresh drafter for one request (None: plain decoding); ``prompt_texts`` are the request's
        texts whose passages the reference drafter drafts from (``retrieval.prompt_passages``).

        The first request that names a draft model loads it and checks that it shares the target's
        tokenizer; raises ``RequestError`` (param "drafter") when that fails.
        """
        target = self.target()
        if spec.model is not None and not self.config.allows_model(spec.model):
            allowed = ", ".join(f"model:{name}" for name in self.config.extra_models) or "none configured"
            raise RequestError(f"draft model {spec.model!r} is not served here (allowed: {allowed})", "drafter")
        with as_request_error("drafter", *_DRAFT_MODEL_ERRORS, prefix=f"cannot use drafter {str(spec)!r}: "):
            self.once(("prepared", spec), lambda: self.pool.prepare(spec, target))  # loaded and checked once
        passages = prompt_passages(prompt_texts) if PASSAGES in spec.needs else ()
        datastore = self.datastore() if DATASTORE in spec.needs else None
        with as_request_error("drafter", ValueError):
            check_datastore(spec, datastore, target.tokenizer.vocab_size)
        return self.pool.drafter(spec, target, sampling, seed, passages, datastore)


def current_state() -> ServiceState:
    """The state of the app handling the current request."""
    return current_app.extensions[EXTENSION]

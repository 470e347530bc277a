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
from typing import TYPE_CHECKING, Sequence

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
        self._indexes: IndexStore | None = None
        self._datastore: Datastore | None = None
        self._stores: dict[str, StoreRetriever] = {}  # the vector stores opened so far, by name
        self._store_lock = threading.Lock()  # one store opened at a time
        self.started = int(time.time())  # Unix time the app was created (OpenAI's model "created")
        self._target: Model | None = None
        self.verify_batcher: "VerifyBatcher | None" = None  # the target's, with config.batch_verify (once loaded)
        self._prepared: set[DrafterSpec] = set()  # drafters whose models are loaded and checked
        self._correctors: dict[str, GrammarCorrector] = {}  # by model name
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        """Whether the target model has been loaded (requests load it; health checks do not)."""
        return self._target is not None

    def target(self) -> Model:
        """The served model, loading it on the first call; later calls return the same instance."""
        if self._target is None:
            with self._lock:
                if self._target is None:
                    target = self.pool.get(self.config.model_name)
                    if self.config.batch_verify is not None:  # ServiceConfig checked the backend
                        from specdraft.backends.transformers.model import enable_verify_batching

                        self.verify_batcher = enable_verify_batching(target, self.config.batch_verify)
                    self._target = target
        return self._target

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
        if name not in self._correctors:
            model = self.model(name)  # outside the lock: target() takes it too
            config = CorrectorConfig(
                max_text_chars=self.config.max_grammar_chars,
                editor=EditorConfig(speculation=self.config.grammar_speculation),
            )
            with self._lock:
                self._correctors.setdefault(name, GrammarCorrector(model, config))
        return self._correctors[name]

    def indexes(self) -> IndexStore:
        """The named document indexes (no embedding model is loaded until one is used)."""
        with self._lock:
            if self._indexes is None:
                embedder = self._embedder or Embedder(EmbedderConfig(model=self.config.embedding_model))
                self._indexes = IndexStore(self.config.index_root, embedder)
            return self._indexes

    def store(self, name: str) -> "StoreRetriever":
        """The vector store collection ``name`` of ``config.stores``, opened on first use with the
        indexes' embedder and kept (searches never change it). ``StoreError`` (a ValueError) when it
        cannot be opened (no such collection, a missing extra); a later call tries again."""
        from specdraft.retrieval.stores import open_store

        with self._lock:
            opened = self._stores.get(name)
        if opened is not None:
            return opened
        config = self.config.store(name)
        if config is None:
            raise KeyError(name)
        embedder = self.indexes().embedder  # outside the lock: indexes() takes it
        with self._store_lock:
            with self._lock:
                if name in self._stores:
                    return self._stores[name]
            opened = open_store(config, embedder)
            with self._lock:
                self._stores[name] = opened
            return opened

    def datastore(self) -> Datastore | None:
        """The configured REST datastore, opened (memory-mapped) on first use; None when there is none."""
        if self.config.datastore is None:
            return None
        with self._lock:
            if self._datastore is None:
                self._datastore = Datastore.load(self.config.datastore)
            return self._datastore

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
        if spec not in self._prepared:
            with as_request_error("drafter", *_DRAFT_MODEL_ERRORS, prefix=f"cannot use drafter {str(spec)!r}: "):
                self.pool.prepare(spec, target)
            with self._lock:
                self._prepared.add(spec)
        passages = prompt_passages(prompt_texts) if PASSAGES in spec.needs else ()
        datastore = self.datastore() if DATASTORE in spec.needs else None
        with as_request_error("drafter", ValueError):
            check_datastore(spec, datastore, target.tokenizer.vocab_size)
        return self.pool.drafter(spec, target, sampling, seed, passages, datastore)


def current_state() -> ServiceState:
    """The state of the app handling the current request."""
    return current_app.extensions[EXTENSION]

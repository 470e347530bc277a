"""Models by name, as the command line, the service and the benchmark load them; their drafters.

``ModelPool`` loads each model once, after one ``ModelConfig`` (backend, device, dtype, context,
engine: the same for every model of the pool), and shares it (models hold no request state). It
also loads the draft models that ``model:NAME`` drafter choices name (``specdraft.retrieval.
drafter_registry`` names every drafter) and builds a fresh drafter per request (``drafter``). A
draft model runs on the pool's backend (on this machine when that is an engine), or on llama.cpp
when NAME is a ``.gguf`` path.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Sequence

from specdraft import Drafter, Model, ModelConfig, SamplingParams, check_same_tokenizer, load_model
from specdraft.prefix_cache import PrefixCacheConfig, configure_prefix_cache
from specdraft.retrieval.datastore import Datastore
from specdraft.retrieval.drafter_registry import DRAFT_MODEL, PASSAGES, DrafterSpec, DraftInputs

# What a completion (the service's, `specdraft generate`'s, the bench's) offers a drafter: the passages
# of its prompt and draft models (and, on the service, its datastore when it has one).
COMPLETION_OFFERS = frozenset({PASSAGES, DRAFT_MODEL})


class ModelPool:
    """Loads each model once (thread-safe) and hands out the shared instance. ``model``: the
    ``ModelConfig`` every model of the pool is loaded with, its ``model`` field replaced by the
    name asked for (``config(name)``); the "fast-path" backend loads a transformers model as
    ``specdraft.backends.fast_path.FastPathModel``. ``prefix_cache``: the prefix-cache config of
    every model the pool loads (``--no-prefix-cache``: disabled); None leaves each model the process
    default (``specdraft.prefix_cache.prefix_cache_for``). Every model is loaded by
    ``specdraft.backends.load_model``.

    The engine backend: ``get(name)`` is the serving engine's model
    (``specdraft.backends.engine.EngineModel``) with ``name`` loaded here only for its tokenizer
    (``ModelConfig.local``); draft models (``get_local``) still run here. The edge backend alike: ``get(name)``
    is ``specdraft.edge``'s ``EdgeModel``, with ``name`` loaded here to draft."""

    def __init__(self, model: ModelConfig = ModelConfig(), prefix_cache: PrefixCacheConfig | None = None) -> None:
        self.model = model
        self.prefix_cache = prefix_cache
        self._models: dict[str, Model] = {}
        self._local: dict[str, Model] = {}
        self._lock = threading.Lock()

    @property
    def local_backend(self) -> str:
        """The backend of the models that run on this machine (the engine's tokenizer model, draft models)."""
        return self.model.local.backend

    @property
    def _elsewhere(self) -> bool:
        """Whether the pool's models are verified elsewhere (engine, edge): each then also runs here."""
        return self.model.local != self.model

    def config(self, name: str) -> ModelConfig:
        """What ``get(name)`` loads (through ``specdraft.backends.load_model``, the one place a backend
        name becomes a loader)."""
        return replace(self.model, model=name)

    def get(self, name: str) -> Model:
        with self._lock:
            if name in self._models:  # loaded, or added (``add``)
                return self._models[name]
        local = self.get_local(name) if self._elsewhere else None
        with self._lock:
            if name not in self._models:
                self._models[name] = self._load(self.config(name), local)
            return self._models[name]

    def get_local(self, name: str) -> Model:
        """``name`` run on this machine (the same as ``get`` unless the pool's backend is an engine)."""
        if not self._elsewhere:
            return self.get(name)
        with self._lock:
            if name not in self._local:
                self._local[name] = self._load(self.config(name).local)
            return self._local[name]

    def _load(self, config: ModelConfig, local: Model | None = None) -> Model:
        """``load_model(config, local)``, with the pool's prefix-cache config when it has one."""
        model = load_model(config, local)
        if self.prefix_cache is not None:
            configure_prefix_cache(model, self.prefix_cache)
        return model

    def add(self, name: str, model: Model) -> None:
        """Serve ``model`` (loaded elsewhere) as ``name``; it takes the pool's prefix-cache config as a loaded one
        does."""
        if self.prefix_cache is not None:
            configure_prefix_cache(model, self.prefix_cache)
        with self._lock:
            self._models[name] = model

    def prepare(self, spec: DrafterSpec, target: Model) -> None:
        """Load what ``spec`` needs ahead of its first request (a draft model) and check that it
        shares ``target``'s tokenizer (ValueError when not)."""
        if spec.model is not None:
            check_same_tokenizer(self.get_local(spec.model), target)

    def drafter(
        self,
        spec: DrafterSpec,
        target: Model,
        sampling: SamplingParams,
        seed: int | None = None,
        passages: Sequence[str] = (),
        datastore: Datastore | None = None,
    ) -> Drafter | None:
        """A fresh drafter for one request on ``target`` (None: plain decoding), sampling with
        ``sampling``/``seed`` where it is a draft model. ``passages``: what the reference drafter drafts
        from (a completion's: ``prompt_passages`` of its texts; with none it decodes plainly);
        ``datastore``: the datastore drafters' (the service's, when it has one)."""
        draft_model = self.get_local(spec.model) if spec.model is not None else None
        inputs = DraftInputs(target.tokenizer, target.vocab_size, passages, datastore, draft_model, sampling, seed)
        return spec.build(inputs)

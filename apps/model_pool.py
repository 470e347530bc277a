"""Models and drafters by name, as the command line, the service and the benchmark spell them.

``ModelPool`` loads each model once, on one backend, and shares it (models hold no request state).
``DrafterSpec`` names a general drafter: ``none`` (plain decoding), ``prompt-lookup`` (n-gram
lookup in the context), ``documents`` (the reference drafter over the passages in the request's own
prompt, see ``specdraft.retrieval.prompt_passages``), or ``model:NAME`` (a draft model sharing the
target's tokenizer, loaded once per pool; each request gets its own cache). A draft model runs on the pool's backend, or on
llama.cpp when NAME is a ``.gguf`` path.
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Sequence

from specdraft import Drafter, Model, ModelConfig, SamplingParams, check_same_tokenizer, load_model
from specdraft.drafters import DraftModelConfig, DraftModelDrafter, PromptLookupDrafter
from specdraft.prefix_cache import PrefixCacheConfig, configure_prefix_cache
from specdraft.retrieval.pipeline import GENERAL_DRAFTERS, NO_DRAFTER, PROMPT_LOOKUP
from specdraft.retrieval.prompt_passages import DOCUMENTS, documents_drafter
from specdraft.sampling import PositionalRandom

if TYPE_CHECKING:
    from specdraft.backends.engine import EngineConfig

ENGINE = "engine"  # the --backend that verifies on a serving engine (specdraft.backends.engine)
FAST_PATH = "fast-path"  # the --backend of --fast-path: transformers on static caches (specdraft.backends.fast_path)

# The general drafters: those the RAG pipeline shares (named once, in retrieval.pipeline), the passages
# of the prompt (retrieval.prompt_passages), and a draft model.
DRAFTER_NAMES = (*GENERAL_DRAFTERS, DOCUMENTS, "model:NAME")


class ModelPool:
    """Loads each model once (thread-safe) and hands out the shared instance. ``backend``,
    ``device``, ``dtype`` and ``context`` are ``ModelConfig``'s, for every model of the pool;
    ``fast_path`` (or ``backend="fast-path"``) loads transformers models as
    ``specdraft.backends.fast_path.FastPathModel`` (opt-in). ``prefix_cache``: the prefix-cache config
    of every model the pool loads (``--no-prefix-cache``: disabled); None leaves each model the process
    default (``specdraft.prefix_cache.prefix_cache_for``). Every model is loaded by
    ``specdraft.backends.load_model``.

    ``backend="engine"`` (with ``engine``, an ``EngineConfig``): ``get(name)`` is the serving engine's
    model (``specdraft.backends.engine.EngineModel``) with ``name`` loaded here only for its tokenizer
    (the GGUF file through llama.cpp for the llama-cpp-python server, else ``auto``); draft models
    (``get_local``) still run here."""

    def __init__(
        self,
        device: str = "auto",
        dtype: str = "auto",
        backend: str = "auto",
        context: int = 0,
        engine: "EngineConfig | None" = None,
        fast_path: bool = False,
        prefix_cache: PrefixCacheConfig | None = None,
    ) -> None:
        if (backend == ENGINE) != (engine is not None):
            raise ValueError("the engine backend needs an engine (--engine-url), and an engine needs --backend engine")
        if backend == FAST_PATH:
            backend, fast_path = "transformers", True
        if fast_path and backend in ("llama-cpp", ENGINE):
            raise ValueError("the fast path (--fast-path) is for the transformers backend")
        self._defaults = ModelConfig(
            device=device, dtype=dtype, backend=backend, context=context, engine=engine
        )  # validates them
        self.device = device
        self.dtype = dtype
        self.backend = backend
        self.local_backend = self._defaults.local.backend
        self.context = context
        self.engine = engine
        self.fast_path = fast_path
        self.prefix_cache = prefix_cache
        self._models: dict[str, Model] = {}
        self._local: dict[str, Model] = {}
        self._lock = threading.Lock()

    def config(self, name: str) -> ModelConfig:
        """What ``get(name)`` loads (through ``specdraft.backends.load_model``, the one place a backend
        name becomes a loader): with ``fast_path``, the "fast-path" backend for a transformers model."""
        config = replace(self._defaults, model=name)
        if self.fast_path:
            if config.resolved_backend != "transformers":
                raise ValueError(
                    f"the fast path (--fast-path) is for the transformers backend; {name} runs on {config.resolved_backend}"
                )
            config = replace(config, backend=FAST_PATH)
        return config

    def get(self, name: str) -> Model:
        local = self.get_local(name) if self.engine is not None else None
        with self._lock:
            if name not in self._models:
                self._models[name] = self._load(self.config(name), local)
            return self._models[name]

    def get_local(self, name: str) -> Model:
        """``name`` run on this machine (the same as ``get`` unless the pool's backend is an engine)."""
        if self.engine is None:
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
        """Serve ``model`` (loaded elsewhere) as ``name``; it takes the pool's prefix-cache config as a loaded one does."""
        if self.prefix_cache is not None:
            configure_prefix_cache(model, self.prefix_cache)
        with self._lock:
            self._models[name] = model


@dataclass(frozen=True)
class DrafterSpec:
    kind: str  # "none", "prompt-lookup", "documents" or "model"
    model: str | None = None
    tree_width: int = 1

    @classmethod
    def parse(cls, text: str, tree_width: int = 1) -> "DrafterSpec":
        text = (text or "").strip()
        if text in (*GENERAL_DRAFTERS, DOCUMENTS):
            return cls(text)
        if text.startswith("model:") and text[len("model:") :].strip():
            return cls("model", text[len("model:") :].strip(), tree_width)
        raise ValueError(f"unknown drafter {text!r}: choose one of {', '.join(DRAFTER_NAMES)}")

    def __str__(self) -> str:
        return f"model:{self.model}" if self.kind == "model" else self.kind

    def prepare(self, pool: ModelPool, target: Model) -> None:
        """Load what the drafter needs ahead of the first request (and check tokenizers)."""
        if self.kind == "model":
            check_same_tokenizer(pool.get_local(self.model), target)

    def build(
        self,
        pool: ModelPool,
        target: Model,
        sampling: SamplingParams,
        seed: int | None = None,
        prompt_texts: Sequence[str] = (),
    ) -> Drafter | None:
        """A fresh drafter for one request (None for plain decoding). ``prompt_texts``: the request's
        texts the ``documents`` drafter takes its passages from (``prompt_passages.prompt_texts``);
        with none it decodes plainly."""
        if self.kind == NO_DRAFTER:
            return None
        if self.kind == PROMPT_LOOKUP:
            return PromptLookupDrafter()
        if self.kind == DOCUMENTS:
            return documents_drafter(target.tokenizer, prompt_texts)
        rng = PositionalRandom(secrets.randbits(62) if seed is None else seed)
        return DraftModelDrafter(
            pool.get_local(self.model), target.vocab_size, sampling, rng, DraftModelConfig(self.tree_width)
        )

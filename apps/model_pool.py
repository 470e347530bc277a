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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from specdraft import Drafter, Model, ModelConfig, SamplingParams, check_same_tokenizer, load_model
from specdraft.drafters import DraftModelConfig, DraftModelDrafter, PromptLookupDrafter
from specdraft.retrieval.pipeline import GENERAL_DRAFTERS, NO_DRAFTER, PROMPT_LOOKUP
from specdraft.retrieval.prompt_passages import DOCUMENTS, documents_drafter
from specdraft.sampling import PositionalRandom

if TYPE_CHECKING:
    from specdraft.backends.engine import EngineConfig

ENGINE = "engine"  # the --backend that verifies on a serving engine (specdraft.backends.engine)

# The general drafters: those the RAG pipeline shares (named once, in retrieval.pipeline), the passages
# of the prompt (retrieval.prompt_passages), and a draft model.
DRAFTER_NAMES = (*GENERAL_DRAFTERS, DOCUMENTS, "model:NAME")


class ModelPool:
    """Loads each model once (thread-safe) and hands out the shared instance. ``backend``,
    ``device``, ``dtype`` and ``context`` are ``ModelConfig``'s, for every model of the pool;
    ``fast_path`` loads transformers models as ``specdraft.backends.fast_path.FastPathModel`` (opt-in).

    ``backend="engine"`` (with ``engine``, an ``EngineConfig``): ``get(name)`` is the serving engine's
    model (``specdraft.backends.engine.EngineModel``) with ``name`` loaded here only for its tokenizer
    (the GGUF file through llama.cpp for the llama-cpp-python server, else ``auto``); draft models
    (``get_local``) still run here."""

    def __init__(self, device: str = "auto", dtype: str = "auto", backend: str = "auto", context: int = 0,
                 engine: "EngineConfig | None" = None, fast_path: bool = False) -> None:
        if (backend == ENGINE) != (engine is not None):
            raise ValueError("the engine backend needs an engine (--engine-url), and an engine needs --backend engine")
        if fast_path and backend in ("llama-cpp", ENGINE):
            raise ValueError("the fast path (--fast-path) is for the transformers backend")
        local = backend if engine is None else ("llama-cpp" if engine.api == "llama-cpp-server" else "auto")
        ModelConfig(device=device, dtype=dtype, backend=local, context=context)  # validates them
        self.device = device
        self.dtype = dtype
        self.backend = backend
        self.local_backend = local
        self.context = context
        self.engine = engine
        self.fast_path = fast_path
        self._models: dict[str, Model] = {}
        self._local: dict[str, Model] = {}
        self._lock = threading.Lock()

    def config(self, name: str) -> ModelConfig:
        return ModelConfig(name, self.device, self.dtype, self.local_backend, self.context)

    def get(self, name: str) -> Model:
        local = self.get_local(name) if self.engine is not None else None
        with self._lock:
            if name not in self._models:
                if local is None:
                    self._models[name] = self._load(name)
                else:
                    from specdraft.backends.engine import EngineModel

                    self._models[name] = EngineModel(self.engine, local)
            return self._models[name]

    def get_local(self, name: str) -> Model:
        """``name`` run on this machine (the same as ``get`` unless the pool's backend is an engine)."""
        if self.engine is None:
            return self.get(name)
        with self._lock:
            if name not in self._local:
                self._local[name] = self._load(name)
            return self._local[name]

    def _load(self, name: str) -> Model:
        """``name`` on this machine; with ``fast_path``, a transformers model on static caches
        (``specdraft.backends.fast_path.FastPathModel``)."""
        model = load_model(self.config(name))
        if not self.fast_path:
            return model
        if getattr(model, "backend", None) != "transformers":
            raise ValueError(f"the fast path (--fast-path) is for the transformers backend; {name} runs on {model.backend}")
        from specdraft.backends.fast_path import FastPathModel

        return FastPathModel(model)

    def add(self, name: str, model: Model) -> None:
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
        self, pool: ModelPool, target: Model, sampling: SamplingParams, seed: int | None = None, prompt_texts: Sequence[str] = ()
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
        return DraftModelDrafter(pool.get_local(self.model), target.vocab_size, sampling, rng, DraftModelConfig(self.tree_width))

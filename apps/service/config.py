"""ServiceConfig: what the HTTP service serves and the limits it enforces on requests.

One frozen dataclass, validated at construction; the command line maps its flags onto it. The
per-request decoding defaults (temperature, top_p, ...) are not repeated here: a request that omits
them gets ``GenerationConfig``'s defaults.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from specdraft import GenerationConfig, ModelConfig, SpeculationConfig
from specdraft.apps.model_pool import COMPLETION_OFFERS
from specdraft.backends.transformers.verify_batch_config import VerifyBatchConfig
from specdraft.copydraft.corrector import DEFAULT_GRAMMAR_MODEL
from specdraft.copydraft.editor import COPY_SPECULATION
from specdraft.retrieval.drafter_registry import DATASTORE, PASSAGES, DrafterSpec, parse_drafter, require
from specdraft.retrieval.embedder import DEFAULT_EMBEDDER
from specdraft.retrieval.pipeline import RAG_OFFERS, RAG_SPECULATION, RAGConfig
from specdraft.retrieval.stores.config import StoreConfig

from .edge_sessions import EdgeConfig
from .limits import LimitConfig, check_settings


def default_index_root() -> str:
    """Where the service keeps its document indexes: ``$SPECDRAFT_INDEX_ROOT``, else
    ``$XDG_DATA_HOME/specdraft/indexes`` (``~/.local/share/specdraft/indexes``)."""
    if os.environ.get("SPECDRAFT_INDEX_ROOT"):
        return os.environ["SPECDRAFT_INDEX_ROOT"]
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return str(Path(data) / "specdraft" / "indexes")


@dataclass(frozen=True)
class ServiceConfig:
    """``model``: the target every request is answered by, loaded once, on first use: a ``ModelConfig``
    (the model's registry name, local path or hub id, its backend, device, dtype, context, and for the
    engine backend the engine), or its name alone for ``ModelConfig(name)``; ``model_name`` is the name.
    Extra models and draft models are loaded with the same config (``ModelPool``). ``drafter``: the
    drafter for requests that do not name one (a name of ``specdraft.retrieval.drafter_registry``:
    "none", "prompt-lookup", "reference" (alias "documents"), "model:NAME"; the datastore drafters
    with ``datastore``).
    ``max_tokens_limit``: the largest ``max_tokens`` a request may ask for; ``default_max_tokens``:
    what a request that omits it gets (by default ``GenerationConfig``'s ``max_new_tokens``, which the
    command line's ``--max-new-tokens`` also defaults to: the same request gets the same answer). ``max_request_bytes``:
    larger request bodies get a 413. ``extra_models``: other models a request may name (a ``model:NAME`` drafter, or the
    ``model`` of a grammar correction), loaded on first use; a client must never make the server load arbitrary
    paths or hub ids. The default drafter's model is always allowed.
    ``max_grammar_chars``: the longest text ``POST /v1/grammar/correct`` accepts (longer: a 413).
    ``speculation``: the engine's draft-length and fall-back policy for completions;
    ``grammar_speculation``: the one for grammar corrections (drafts copied from the input: long);
    ``rag_speculation``: the one for RAG answers (drafts quoted from passages).
    RAG: ``index_root`` holds the named document indexes (one folder each); ``embedding_model`` embeds
    them (an index built with another model is refused); ``datastore``: a REST datastore folder for
    the datastore drafters (None: those drafters are refused); ``rag_drafter`` and ``rag_top_k``: a
    query's defaults; ``max_rag_top_k``, ``max_rag_documents``: per-request limits. ``stores``: the
    users' vector store collections a query may name in its ``store`` field, as (name, ``StoreConfig``)
    pairs (``specdraft.retrieval.stores``; opened on first use, embedded with ``embedding_model``).
    Access: ``api_key_file`` lists the API keys and their scopes (None: no keys, loopback only);
    ``allowed_origins``/``allowed_hosts``: other origins whose pages may send requests, other Host
    names accepted without keys (see ``access``). ``limits``: concurrency, queue and time limits.
    ``batch_verify``: None (default) runs every verification pass alone; a ``VerifyBatchConfig`` verifies
    concurrent requests' drafts in one padded pass (transformers backend only;
    ``specdraft.backends.transformers.verify_batcher``)."""

    model: ModelConfig = ModelConfig()
    drafter: str = "prompt-lookup"
    max_tokens_limit: int = 2048
    default_max_tokens: int = GenerationConfig().max_new_tokens  # the core's: `specdraft generate` gets the same
    max_request_bytes: int = 1_000_000
    extra_models: tuple[str, ...] = ()
    max_grammar_chars: int = 20_000
    # the model a grammar correction that names none gets (always allowed there; loaded on first use)
    grammar_model: str = DEFAULT_GRAMMAR_MODEL
    speculation: SpeculationConfig = SpeculationConfig()
    grammar_speculation: SpeculationConfig = COPY_SPECULATION
    rag_speculation: SpeculationConfig = RAG_SPECULATION
    index_root: str = field(default_factory=default_index_root)
    embedding_model: str = DEFAULT_EMBEDDER
    datastore: str | None = None
    rag_drafter: str = "reference"
    rag_top_k: int = RAGConfig().top_k  # the pipeline's: `specdraft ask` gets the same
    max_rag_top_k: int = 10
    max_rag_documents: int = 1000
    stores: tuple[tuple[str, StoreConfig], ...] = ()
    # model names a completion request may send (OpenAI clients send their own defaults, e.g.
    # "gpt-3.5-turbo"): ``model``'s, any of ``model_aliases``, or any name at all with
    # ``serve_any_model_name``; the answer always comes from ``model`` and names it (see ``protocol.completions``)
    model_aliases: tuple[str, ...] = ()
    serve_any_model_name: bool = False
    # access and load (see ``access``, ``api_keys``, ``limits``)
    api_key_file: str | None = None
    allowed_origins: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()
    limits: LimitConfig = LimitConfig()
    # the edge verify server (``specdraft serve --edge``, see ``edge``): needs API keys
    edge: bool = False
    edge_config: EdgeConfig = EdgeConfig()
    batch_verify: VerifyBatchConfig | None = None
    # responses kept for a later request's previous_response_id (POST /v1/responses; the least recently used go)
    max_stored_responses: int = 1000

    def __post_init__(self) -> None:
        if isinstance(self.model, str):  # a name alone: the default config for it
            object.__setattr__(self, "model", ModelConfig(self.model))
        if not self.model_name.strip():
            raise ValueError("model must name a model")
        require(self.drafter_spec, self.completion_offers)  # validates the drafter's name and what it needs
        names = ("max_tokens_limit", "max_request_bytes", "max_grammar_chars", "max_rag_documents")
        check_settings(self, {**dict.fromkeys(names, 1), "max_stored_responses": 0})
        if not 1 <= self.default_max_tokens <= self.max_tokens_limit:
            raise ValueError(
                f"default_max_tokens must be in [1, max_tokens_limit={self.max_tokens_limit}], "
                f"got {self.default_max_tokens}"
            )
        try:
            require(parse_drafter(self.rag_drafter, offers=self.rag_offers), self.rag_offers)
        except ValueError as error:
            raise ValueError(f"rag_drafter: {error}") from None
        if not 1 <= self.rag_top_k <= self.max_rag_top_k:
            raise ValueError(f"rag_top_k must be in [1, max_rag_top_k={self.max_rag_top_k}], got {self.rag_top_k}")
        names = [name for name, _ in self.stores]
        if len(set(names)) != len(names) or not all(isinstance(name, str) and name.strip() for name in names):
            raise ValueError(f"stores must have distinct, non-empty names, got {names}")
        if not all(isinstance(store, StoreConfig) for _, store in self.stores):
            raise ValueError("stores must be (name, StoreConfig) pairs")
        if self.batch_verify is not None and self.model.resolved_backend != "transformers":
            raise ValueError(
                f"verify batching (--batch-verify) is for the transformers backend, not {self.model.resolved_backend}"
            )
        if self.edge and self.api_key_file is None:
            raise ValueError("the edge verify server needs API keys: give api_key_file (--api-key-file FILE)")

    def allows_model(self, name: str) -> bool:
        """Whether a request may name ``name`` (the served model, an extra model, the default drafter's)."""
        default = self.drafter_spec
        return name in (self.model_name, *self.extra_models) or (default.model is not None and default.model == name)

    @property
    def model_name(self) -> str:
        """The served model's name (``model.model``): what answers and ``/v1/models`` name."""
        return self.model.model

    @property
    def drafter_spec(self) -> DrafterSpec:
        return parse_drafter(self.drafter, offers=self.completion_offers)

    @property
    def completion_offers(self) -> frozenset[str]:
        """What a completion offers its drafter: its prompt's passages, draft models, the datastore if any."""
        return COMPLETION_OFFERS | ({DATASTORE} if self.datastore is not None else set())

    def store(self, name: str) -> StoreConfig | None:
        """The vector store collection named ``name`` (None: no such store here)."""
        return dict(self.stores).get(name)

    @property
    def rag_offers(self) -> frozenset[str]:
        """What a RAG answer offers its drafter: the retrieved passages, the datastore if any."""
        return RAG_OFFERS if self.datastore is not None else frozenset({PASSAGES})

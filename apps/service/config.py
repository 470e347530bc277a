"""ServiceConfig: what the HTTP service serves and the limits it enforces on requests.

One frozen dataclass, validated at construction; the command line maps its flags onto it. The
per-request decoding defaults (temperature, top_p, ...) are not repeated here: a request that omits
them gets ``GenerationConfig``'s defaults.
"""

from __future__ import annotations

from dataclasses import dataclass

from specdraft import DEFAULT_MODEL, ModelConfig, SpeculationConfig
from specdraft.copydraft.editor import COPY_SPECULATION
from specdraft.drafters.factory import DrafterSpec


@dataclass(frozen=True)
class ServiceConfig:
    """``model``: the target every request is answered by (registry name, local path or hub id),
    loaded once, on first use, with ``device``/``dtype`` (see ``ModelConfig``). ``drafter``: the
    drafter for requests that do not name one ("none", "prompt-lookup" or "model:NAME").
    ``max_tokens_limit``: the largest ``max_tokens`` a request may ask for; ``default_max_tokens``:
    what a request that omits it gets. ``max_request_bytes``: larger request bodies get a 413.
    ``extra_models``: other models a request may name (a ``model:NAME`` drafter, or the ``model`` of
    a grammar correction), loaded on first use; a client must never make the server load arbitrary
    paths or hub ids. The default drafter's model is always allowed.
    ``max_grammar_chars``: the longest text ``POST /v1/grammar/correct`` accepts (longer: a 413).
    ``speculation``: the engine's draft-length and fall-back policy for completions;
    ``grammar_speculation``: the one for grammar corrections (drafts copied from the input: long)."""

    model: str = DEFAULT_MODEL
    drafter: str = "prompt-lookup"
    device: str = "auto"
    dtype: str = "auto"
    max_tokens_limit: int = 2048
    default_max_tokens: int = 256
    max_request_bytes: int = 1_000_000
    extra_models: tuple[str, ...] = ()
    max_grammar_chars: int = 20_000
    speculation: SpeculationConfig = SpeculationConfig()
    grammar_speculation: SpeculationConfig = COPY_SPECULATION

    def __post_init__(self) -> None:
        if not self.model.strip():
            raise ValueError("model must name a model")
        self.model_config  # validates device and dtype
        self.drafter_spec  # validates the drafter's name
        if self.max_tokens_limit < 1:
            raise ValueError(f"max_tokens_limit must be >= 1, got {self.max_tokens_limit}")
        if not 1 <= self.default_max_tokens <= self.max_tokens_limit:
            raise ValueError(
                f"default_max_tokens must be in [1, max_tokens_limit={self.max_tokens_limit}], "
                f"got {self.default_max_tokens}"
            )
        if self.max_request_bytes < 1:
            raise ValueError(f"max_request_bytes must be >= 1, got {self.max_request_bytes}")
        if self.max_grammar_chars < 1:
            raise ValueError(f"max_grammar_chars must be >= 1, got {self.max_grammar_chars}")

    def allows_model(self, name: str) -> bool:
        """Whether a request may name ``name`` (the served model, an extra model, the default drafter's)."""
        default = self.drafter_spec
        return name in (self.model, *self.extra_models) or (default.kind == "model" and default.model == name)

    @property
    def model_config(self) -> ModelConfig:
        return ModelConfig(self.model, self.device, self.dtype)

    @property
    def drafter_spec(self) -> DrafterSpec:
        return DrafterSpec.parse(self.drafter)

"""ServiceConfig: what the HTTP service serves and the limits it enforces on requests.

One frozen dataclass, validated at construction; the command line maps its flags onto it. The
per-request decoding defaults (temperature, top_p, ...) are not repeated here: a request that omits
them gets ``GenerationConfig``'s defaults.
"""

from __future__ import annotations

from dataclasses import dataclass

from specdraft import DEFAULT_MODEL, ModelConfig, SpeculationConfig
from specdraft.drafters.factory import DrafterSpec


@dataclass(frozen=True)
class ServiceConfig:
    """``model``: the target every request is answered by (registry name, local path or hub id),
    loaded once, on first use, with ``device``/``dtype`` (see ``ModelConfig``). ``drafter``: the
    drafter for requests that do not name one ("none", "prompt-lookup" or "model:NAME").
    ``max_tokens_limit``: the largest ``max_tokens`` a request may ask for; ``default_max_tokens``:
    what a request that omits it gets. ``max_request_bytes``: larger request bodies get a 413.
    ``draft_models``: the draft models a request may name as ``model:NAME`` (a client must not make
    the server load arbitrary paths or hub ids); the default drafter's model is always allowed.
    ``speculation``: the engine's draft-length and fall-back policy for every request."""

    model: str = DEFAULT_MODEL
    drafter: str = "prompt-lookup"
    device: str = "auto"
    dtype: str = "auto"
    max_tokens_limit: int = 2048
    default_max_tokens: int = 256
    max_request_bytes: int = 1_000_000
    draft_models: tuple[str, ...] = ()
    speculation: SpeculationConfig = SpeculationConfig()

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

    def allows_draft_model(self, name: str) -> bool:
        default = self.drafter_spec
        return name in self.draft_models or (default.kind == "model" and default.model == name)

    @property
    def model_config(self) -> ModelConfig:
        return ModelConfig(self.model, self.device, self.dtype)

    @property
    def drafter_spec(self) -> DrafterSpec:
        return DrafterSpec.parse(self.drafter)

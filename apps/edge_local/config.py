"""EdgeLocalConfig: what ``specdraft edge serve`` serves on the laptop and the limits it enforces.

One frozen dataclass, validated at construction; ``apps.cli.edge_serve`` maps its flags onto it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from specdraft import GenerationConfig
from specdraft.apps.service.config import ServiceConfig
from specdraft.edge.config import EdgeClientConfig


@dataclass(frozen=True)
class EdgeLocalConfig:
    """``server``/``key``: the verify server (``specdraft serve --edge``) and an API key of its
    ``--api-key-file``; ``timeout_s``: how long one call to it may take before the server counts as
    lost (the answer then goes on from the local model, flagged unverified). ``client``: the
    EdgeClient's drafting settings. ``draft_model``: the local model's name (shown by ``/healthz``).
    ``max_tokens_limit``/``default_max_tokens``: the largest ``max_tokens`` a request may ask for and
    what a request that omits it gets. ``max_request_bytes``: larger bodies get a 413.
    ``api_key_file``: keys this endpoint asks its own clients for (None: no keys, loopback only);
    ``allowed_hosts``: other Host names accepted without keys."""

    server: str
    key: str
    draft_model: str = "local"
    timeout_s: float = 10.0
    client: EdgeClientConfig = field(default_factory=EdgeClientConfig)
    max_tokens_limit: int = ServiceConfig().max_tokens_limit  # the service's, as default_max_tokens is the core's
    default_max_tokens: int = GenerationConfig().max_new_tokens  # the core's, as `specdraft edge` and the service
    max_request_bytes: int = ServiceConfig().max_request_bytes
    api_key_file: str | None = None
    allowed_hosts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.server.startswith(("http://", "https://")):
            raise ValueError(f"server must be an http(s):// URL, got {self.server!r}")
        if not self.key.strip():
            raise ValueError("key must not be empty: give an API key of the verify server")
        if not self.timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {self.timeout_s}")
        if self.max_tokens_limit < 1 or not 1 <= self.default_max_tokens <= self.max_tokens_limit:
            raise ValueError(
                f"need 1 <= default_max_tokens <= max_tokens_limit, got {self.default_max_tokens} and "
                f"{self.max_tokens_limit}"
            )
        if self.max_request_bytes < 1:
            raise ValueError(f"max_request_bytes must be >= 1, got {self.max_request_bytes}")

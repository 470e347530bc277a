"""EdgeClientConfig: how the laptop drafts for the verify server, and how it waits for a lost one.
EdgeServerConfig: the verify server an edge model is served by (``ModelConfig.edge``)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class EdgeClientConfig:
    """``max_draft_nodes``: nodes per verification (capped by the server's limit); ``threshold``: the
    initial confidence below which drafting stops (``adaptive``: moved by acceptance within
    [``min_threshold``, ``max_threshold``]; not adaptive: drafts always fill ``max_draft_nodes``);
    ``tree_width``: children considered per node of a greedy tree (1: a chain), and 1 + the most
    sibling draws per level of a sampled tree; ``alt_below``: a sampled level gets siblings where
    the draft's top probability is below this; ``draft_probs``: under sampling, send the draft
    distributions (``q_top_k`` tokens wide) for the rejection rule (False: sample-and-compare);
    ``pipeline``: keep drafting while a verification is in flight, at most ``lookahead`` tokens past
    it; ``retry_initial_s``/``retry_max_s``: back-off between attempts to reach a lost server."""

    max_draft_nodes: int = 16
    threshold: float = 0.3
    adaptive: bool = True
    min_threshold: float = 0.02
    max_threshold: float = 0.9
    tree_width: int = 3
    alt_below: float = 0.5
    draft_probs: bool = True
    q_top_k: int = 16
    pipeline: bool = True
    lookahead: int = 16
    retry_initial_s: float = 0.25
    retry_max_s: float = 4.0

    def __post_init__(self) -> None:
        if self.max_draft_nodes < 1 or self.lookahead < 0 or self.tree_width < 1 or self.q_top_k < 1:
            raise ValueError("max_draft_nodes, tree_width and q_top_k must be >= 1 and lookahead >= 0")
        if not 0 < self.min_threshold <= self.threshold <= self.max_threshold < 1:
            raise ValueError("need 0 < min_threshold <= threshold <= max_threshold < 1")
        if not 0 < self.retry_initial_s <= self.retry_max_s:
            raise ValueError("need 0 < retry_initial_s <= retry_max_s")


LOCAL_BACKENDS = ("auto", "transformers", "llama-cpp")  # the local (draft) model's


@dataclass(frozen=True)
class EdgeServerConfig:
    """The edge backend's part of a ``ModelConfig`` (``backend="edge"``): the model runs on this machine
    (``ModelConfig.model`` on ``local_backend``) to draft, and ``server`` (``specdraft serve --edge``)
    verifies with ``key``, an API key of its ``--api-key-file``. ``timeout_s``: how long one call may
    take before the server counts as lost (the text then goes on from the local model, unverified).
    ``client``: how the local model drafts (``EdgeClientConfig``)."""

    server: str
    key: str
    timeout_s: float = 10.0
    client: EdgeClientConfig = field(default_factory=EdgeClientConfig)
    local_backend: str = "auto"

    def __post_init__(self) -> None:
        if not self.server.startswith(("http://", "https://")):
            raise ValueError(f"server must be an http(s):// URL, got {self.server!r}")
        if not self.key.strip():
            raise ValueError("key must not be empty: give an API key of the verify server")
        if not self.timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {self.timeout_s}")
        if self.local_backend not in LOCAL_BACKENDS:
            raise ValueError(f"local_backend must be one of {', '.join(LOCAL_BACKENDS)}, got {self.local_backend!r}")

"""EdgeClientConfig: how the laptop drafts for the verify server, and how it waits for a lost one."""

from __future__ import annotations

from dataclasses import dataclass


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

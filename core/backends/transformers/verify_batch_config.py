"""VerifyBatchConfig: the verify batcher's settings (``specdraft.backends.transformers.verify_batcher``), in a module of
its own that imports no torch, so that the command line can build its parser without it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class VerifyBatchConfig:
    """``window_ms``: how long a leading pass waits for other sequences' passes; ``max_batch``: rows in
    one pass; ``active_ms``: a sequence that passed here this recently counts as active (the window is
    waited only while another one is)."""

    window_ms: float = 5.0
    max_batch: int = 8
    active_ms: float = 2000.0

    def __post_init__(self) -> None:
        if not 0 <= self.window_ms <= 1000:
            raise ValueError(f"window_ms must be 0..1000 milliseconds, got {self.window_ms}")
        if not 2 <= self.max_batch <= 64:
            raise ValueError(f"max_batch must be 2..64 rows, got {self.max_batch}")
        if not self.active_ms > 0:
            raise ValueError(f"active_ms must be > 0, got {self.active_ms}")

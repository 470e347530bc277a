"""EdgeClient: a laptop drafts token trees with a small local model, the server verifies them, and
the laptop keeps writing when the server is gone. It runs the core's loop
(``SpeculativeGenerator``): the drafter is ``EdgeDrafter`` (token trees, the adaptive trigger, the
pipeline), the target ``EdgeTarget`` (one verification per round trip over ``EdgeLink``, the local
model standing in while the server is out of reach), the stats ``EdgeStats``.

Online, every emitted token is the server's choice or accepted by the server's lossless rule, so
greedy output equals the server model's greedy output, and sampling keeps its distribution (seeded
sample-and-compare repeats the server's own sampling exactly). Offline (timeout, connection
refused, 5xx, or a session the server no longer has) the client does not stop: it generates on the
local model, emits those tokens flagged unverified (``TextPiece`` source "unverified",
``EdgeResult.verified``, ``stats["unverified_tokens"]``), and retries in the background with
exponential back-off by opening a new session from the whole context shown so far; tokens generated
while that call was on its way are appended, and verification resumes from there. Nothing already
emitted is taken back or rewritten. Text the server confirmed comes as source "verified".
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field, replace
from typing import Any, Iterator, Sequence

from specdraft.generator import GenerationConfig, SpeculativeGenerator
from specdraft.policy import SpeculationConfig
from specdraft.text_stream import TextPiece

from .config import EdgeClientConfig
from .drafter import EdgeDrafter
from .guesses import Guess, LocalGuesser
from .link import EdgeLink
from .stats import EdgeStats
from .target import EdgeModel
from .transport import EdgeConnection
from .trees import Calibration

__all__ = ["EdgeClient", "EdgeClientConfig", "EdgeResult", "EdgeRun"]


@dataclass
class EdgeResult:
    text: str
    token_ids: list[int]
    prompt_token_ids: list[int]
    verified: list[bool]  # per token of token_ids: confirmed by the server (False: the local model's alone)
    finish_reason: str
    stats: EdgeStats
    pieces: list[TextPiece] = field(default_factory=list)


class EdgeClient:
    def __init__(
        self, connection: EdgeConnection, draft_model: Any, config: EdgeClientConfig = EdgeClientConfig()
    ) -> None:
        self.connection = connection
        self.draft_model = draft_model
        self.config = config
        self.calibration = Calibration()  # learnt across this client's runs (tree shapes only, never the text)

    def generate(self, prompt_ids: Sequence[int], generation: GenerationConfig = GenerationConfig()) -> EdgeResult:
        run = self.stream(prompt_ids, generation)
        for _ in run.steps():
            pass
        return run.result()

    def stream(self, prompt_ids: Sequence[int], generation: GenerationConfig = GenerationConfig()) -> "EdgeRun":
        """Iterate ``.steps()`` for ``TextPiece``s as they become final; ``.result()`` afterwards."""
        return EdgeRun(self, list(prompt_ids), generation)


class EdgeRun:
    """One generation: the core loop over this client's drafter and target (module docstring)."""

    def __init__(self, client: EdgeClient, prompt: list[int], generation: GenerationConfig) -> None:
        if not prompt:
            raise ValueError("the prompt must hold at least one token")
        config, local = client.config, client.draft_model
        seed = generation.seed if generation.seed is not None else secrets.randbits(62)
        generation = replace(generation, seed=seed)  # the server's draws and the local model's share it
        self.prompt = prompt
        self._stats = EdgeStats()
        link = EdgeLink(
            client.connection,
            local.tokenizer.fingerprint(),
            generation.sampling,
            seed,
            self._stats,
            config.retry_initial_s,
            config.retry_max_s,
        )
        guesser = LocalGuesser(local, seed, None, config.q_top_k)
        self.drafter = EdgeDrafter(guesser, link, config, generation, client.calibration, self._stats)
        self.model = EdgeModel(link, local, self.drafter)
        fixed = SpeculationConfig(
            initial_draft_len=config.max_draft_nodes, max_draft_len=config.max_draft_nodes, adaptive=False
        )
        self._stream = SpeculativeGenerator(self.model, fixed, prefix_cache=False).stream(
            prompt, self.drafter, generation
        )

    def steps(self) -> Iterator[TextPiece]:
        """The text as it becomes final: "verified" pieces (the server's) and "unverified" ones."""
        for piece in self._stream:
            yield piece if piece.source == "unverified" else TextPiece(piece.text, "verified")

    @property
    def out(self) -> list[int]:
        """The tokens generated so far (committed; may run a step ahead of the text)."""
        target = self.model.target
        return target.context[len(self.prompt) :] if target is not None else []

    @property
    def ahead(self) -> list[Guess]:
        """The local model's guesses past ``out`` (the main chain being drafted)."""
        return list(self.drafter.ahead)

    @property
    def stats(self) -> EdgeStats:
        """The stats so far (final in ``result()``)."""
        self._stats.absorb(self._stream.stats)
        self._stats.target_forward_passes = self.model.link.forward_passes
        return self._stats

    def result(self) -> EdgeResult:
        core = self._stream.result if self._stream.result is not None else self._stream.stop()
        self.drafter.finish()
        stats = self._stats.absorb(core.stats)
        target = self.model.target
        verified = list(target.verified[: len(core.token_ids)]) if target is not None else []
        stats.verified_tokens, stats.unverified_tokens = verified.count(True), verified.count(False)
        pieces = [p if p.source == "unverified" else TextPiece(p.text, "verified") for p in core.pieces]
        return EdgeResult(
            core.text, list(core.token_ids), list(self.prompt), verified, core.finish_reason, stats, pieces
        )

"""EdgeClient: a laptop drafts token trees with a small local model, the server verifies them, and
the laptop keeps writing when the server is gone. It runs the core's loop
(``SpeculativeGenerator``) on ``EdgeModel``: each generation (``EdgeRun``) opens a target
``EdgeTarget`` (one verification per round trip over its ``EdgeLink``, the local model standing in
while the server is out of reach) whose drafter ``EdgeDrafter`` (token trees, the adaptive trigger, the
pipeline) is the generator's drafter; the stats are ``EdgeStats``.

Online, every emitted token is the server's choice or accepted by the server's lossless rule, so
greedy output equals the server model's greedy output, and sampling keeps its distribution (seeded
sample-and-compare repeats the server's own sampling exactly). Offline (timeout, connection
refused, 5xx, or a session the server no longer has) the client does not stop: it generates on the
local model, emits those tokens flagged unverified (``EdgePiece`` source "unverified",
``EdgeResult.verified``, ``stats["unverified_tokens"]``), and retries in the background with
exponential back-off by opening a new session from the whole context shown so far; tokens generated
while that call was on its way are appended, and verification resumes from there. Nothing already
emitted is taken back or rewritten. Text the server confirmed comes as source "verified". The core's
pieces say "draft" or "target"; the run labels each by its token's flag (``TextPiece.token``,
``EdgeTarget.verified``).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field, replace
from typing import Any, Iterator, Literal, Sequence

from specdraft.generator import GenerationConfig, SpeculativeGenerator
from specdraft.policy import SpeculationConfig
from specdraft.text_stream import TextPiece

from .config import EdgeClientConfig
from .guesses import Guess
from .stats import EdgeStats
from .target import EdgeModel
from .transport import EdgeConnection
from .trees import Calibration

__all__ = ["EdgeClient", "EdgeClientConfig", "EdgePiece", "EdgeResult", "EdgeRun"]


@dataclass(frozen=True)
class EdgePiece:
    """A piece of an edge generation's text: "verified" (its token the server chose or accepted) or
    "unverified" (the local model's, written while the server was out of reach)."""

    text: str
    source: Literal["verified", "unverified"]


@dataclass
class EdgeResult:
    text: str
    token_ids: list[int]
    prompt_token_ids: list[int]
    verified: list[bool]  # per token of token_ids: confirmed by the server (False: the local model's alone)
    finish_reason: str
    stats: EdgeStats
    pieces: list[EdgePiece] = field(default_factory=list)


class EdgeClient:
    def __init__(
        self, connection: EdgeConnection, draft_model: Any, config: EdgeClientConfig = EdgeClientConfig()
    ) -> None:
        self.connection = connection
        self.draft_model = draft_model
        self.config = config
        self.calibration = Calibration()  # learnt across this client's runs (tree shapes only, never the text)
        self.model = EdgeModel(connection, draft_model, config, self.calibration)

    def generate(self, prompt_ids: Sequence[int], generation: GenerationConfig = GenerationConfig()) -> EdgeResult:
        run = self.stream(prompt_ids, generation)
        for _ in run.steps():
            pass
        return run.result()

    def stream(self, prompt_ids: Sequence[int], generation: GenerationConfig = GenerationConfig()) -> "EdgeRun":
        """Iterate ``.steps()`` for ``EdgePiece``s as they become final; ``.result()`` afterwards."""
        return EdgeRun(self.model, list(prompt_ids), generation)


DRAFT_CONTEXT = 4  # tokens of the text decoded before the draft (``drafted_text``), so that its leading space survives


class EdgeRun:
    """One generation: the core loop over ``model`` (a client's, or the one the service serves), on the
    target it opens and that target's drafter (module docstring). The run holds the generation's state;
    the model holds none. The first piece (``steps``) opens the session: a refusal (``EdgeRefused``)
    comes then."""

    def __init__(self, model: EdgeModel, prompt: list[int], generation: GenerationConfig) -> None:
        if not prompt:
            raise ValueError("the prompt must hold at least one token")
        seed = generation.seed if generation.seed is not None else secrets.randbits(62)
        generation = replace(generation, seed=seed)  # the server's draws and the local model's share it
        self.prompt = prompt
        self._stats = EdgeStats()
        self.model = model
        self.target = model.open(generation, self._stats)
        self.drafter = self.target.drafter
        nodes = model.config.max_draft_nodes
        fixed = SpeculationConfig(initial_draft_len=nodes, max_draft_len=nodes, adaptive=False)
        self._stream = SpeculativeGenerator(model, fixed, prefix_cache=False).stream(
            prompt, self.drafter, generation, self.target
        )

    def steps(self) -> Iterator[EdgePiece]:
        """The text as it becomes final: "verified" pieces (the server's) and "unverified" ones."""
        for piece in self._stream:
            yield self._labelled(piece)

    def _labelled(self, piece: TextPiece) -> EdgePiece:
        """``piece`` labelled by whether the server confirmed its token."""
        confirmed = piece.token is None or self.target.verified[piece.token]
        return EdgePiece(piece.text, "verified" if confirmed else "unverified")

    @property
    def out(self) -> list[int]:
        """The tokens generated so far (committed; may run a step ahead of the text)."""
        return self.target.context[len(self.prompt) :]

    @property
    def ahead(self) -> list[Guess]:
        """The local model's guesses past ``out`` (the main chain being drafted)."""
        return list(self.drafter.ahead)

    def drafted_text(self) -> str:
        """The local model's guesses past the text, decoded (empty when there are none)."""
        ahead = [g.token for g in self.ahead]
        if not ahead:
            return ""
        tokenizer, before = self.model.tokenizer, self.out[-DRAFT_CONTEXT:]
        return tokenizer.decode(before + ahead)[len(tokenizer.decode(before)) :]

    @property
    def round_trip_ms(self) -> float | None:
        """The round-trip time of the last call the server answered (None before any)."""
        return self.model.connection.last_ms

    @property
    def stats(self) -> EdgeStats:
        """The stats so far (final in ``result()``)."""
        self._stats.absorb(self._stream.stats)
        self._stats.target_forward_passes = self.target.link.forward_passes
        return self._stats

    def result(self) -> EdgeResult:
        core = self._stream.result if self._stream.result is not None else self._stream.stop()
        self.drafter.finish()
        stats = self._stats.absorb(core.stats)
        verified = list(self.target.verified[: len(core.token_ids)])
        stats.verified_tokens, stats.unverified_tokens = verified.count(True), verified.count(False)
        pieces = [self._labelled(piece) for piece in core.pieces]
        return EdgeResult(
            core.text, list(core.token_ids), list(self.prompt), verified, core.finish_reason, stats, pieces
        )

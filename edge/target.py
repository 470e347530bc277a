"""EdgeModel and EdgeTarget: the verify server as the core's ``Model`` and ``Target``, with the laptop's
model standing in while the server is out of reach.

``EdgeModel`` is the server seen from one ``EdgeClient``: text through the local model (which shares the
server's tokenizer), and a target per generation (``open``). It holds nothing of a generation: each
target has its own link to the server (``EdgeLink``: its session, losing and regaining it) and the local
drafter that drafts for it (``EdgeTarget.drafter``, the ``EdgeDrafter`` the client gives the generator).

``EdgeTarget.verify(draft)``, the link online: sends the draft (the drafter's tree with its draft
distributions under sampling, ``EdgeDrafter.sending``) in one round trip, the drafter drafting ahead
while it is in flight; the server accepts (its own choices, or rejection sampling over ``q``) and
commits, and its acceptance comes back as ``Verification.accepted``. Offline, or when the server is
lost during the call: the local model chooses the next token (``EdgeDrafter.choose_local``), which the
core sees as the target's own choice over an empty path, and the link starts reconnecting. Every token
emitted online is the server's choice or accepted by the server's lossless rule, so greedy output
equals the server model's greedy output and sampling keeps its distribution; nothing already emitted is
taken back.

The edge's own bookkeeping stays here: ``verified`` holds, per committed token, whether the server
confirmed it, and the verify steps in ``EdgeStats`` are the verifications the server answered (recorded
here; a token the local model chose alone is no verify step).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Sequence

from specdraft.acceptance import Acceptance
from specdraft.cost import PassCostProfile
from specdraft.draft import Draft
from specdraft.generator import GenerationConfig
from specdraft.sampling import TokenChooser
from specdraft.served_text import ServedText
from specdraft.target import CacheElsewhere
from specdraft.verification import Verification

from .config import EdgeClientConfig
from .drafter import EdgeDrafter
from .guesses import LocalGuesser
from .link import EdgeLink
from .stats import EdgeStats
from .transport import EdgeConnection, EdgeRefused, ServerUnavailable, TransportConfig
from .trees import Calibration

if TYPE_CHECKING:
    from specdraft.model_config import ModelConfig

INFO_RETRY_S = 5.0  # after the server did not answer its info call, ask again after this long


class EdgeModel(ServedText):
    """The served model seen from the laptop (``Model`` protocol; module docstring): text through the
    ``local`` model, generations over ``connection``, drafted as ``config`` says with the tree
    ``calibration`` the client learns across its generations."""

    served_by = "is verified by a remote server"

    backend = "edge"
    exact = False  # tokens the local model writes while the server is lost are not the server's

    def __init__(
        self, connection: EdgeConnection, local: Any, config: EdgeClientConfig, calibration: Calibration
    ) -> None:
        self.connection, self.local, self.config, self.calibration = connection, local, config, calibration
        self.name = f"edge @ {connection.url}"
        self.tokenizer = local.tokenizer
        self.cost = PassCostProfile()
        self._info: dict[str, Any] | None = None
        self._ask_again_at = 0.0

    @classmethod
    def load(cls, config: "ModelConfig", local: Any) -> "EdgeModel":
        """The edge model of ``config`` (``config.edge``: the verify server, ``EdgeServerConfig``), drafting
        with ``local`` (``config.local`` loaded); contacts no server (``specdraft.backends.load_model``)."""
        if config.edge is None:
            raise ValueError("the edge backend needs a verify server (ModelConfig.edge)")
        edge = config.edge
        connection = EdgeConnection(edge.server, edge.key, TransportConfig(timeout_s=edge.timeout_s))
        return cls(connection, local, edge.client, Calibration())

    def info(self) -> dict[str, Any] | None:
        """The server's ``GET /v1/edge/info`` (model name, context, vocabulary, tokenizer), asked until it
        answers once; None while the server is out of reach (asked again ``INFO_RETRY_S`` later, so
        that callers meanwhile do not wait). Raises ``EdgeRefused`` when the server refuses the key."""
        if self._info is None and time.monotonic() >= self._ask_again_at:
            try:
                self._info = self.connection.request("GET", "/v1/edge/info")
            except ServerUnavailable:
                self._ask_again_at = time.monotonic() + INFO_RETRY_S
        return self._info

    @property
    def max_length(self) -> int:
        """The local model's context, capped by the server's once known (``info``; a session learns it too)."""
        local = int(self.local.max_length)
        return min(local, int(self._info["max_length"])) if self._info else local

    @property
    def vocab_size(self) -> int:
        return int(self.local.vocab_size)

    @property
    def eos_token_ids(self) -> frozenset[int]:
        return frozenset(self.local.eos_token_ids)

    @property
    def has_chat_template(self) -> bool:
        return bool(self.local.has_chat_template)

    @property
    def chat_template(self) -> str | None:
        return self.local.chat_template

    def open(self, generation: GenerationConfig, stats: EdgeStats) -> "EdgeTarget":
        """The target of one generation with ``generation``'s settings (its ``seed`` set: the server's
        draws and the local model's share it), measured in ``stats``."""
        if generation.seed is None:
            raise ValueError("an edge generation needs its seed")
        config, seed = self.config, generation.seed
        link = EdgeLink(
            self.connection,
            self.tokenizer.fingerprint(),
            generation.sampling,
            seed,
            stats,
            config.retry_initial_s,
            config.retry_max_s,
        )
        guesser = LocalGuesser(self.local, seed, None, config.q_top_k)
        return EdgeTarget(link, EdgeDrafter(guesser, link, config, generation, self.calibration, stats))

    def new_target(self, chooser: TokenChooser = TokenChooser()) -> "EdgeTarget":
        """A target sampling as ``chooser`` does (its parameters and seed), the other settings
        ``GenerationConfig``'s defaults; ``EdgeClient`` opens each with the request's own (``open``)."""
        params = chooser.params
        generation = GenerationConfig(
            temperature=params.temperature, top_p=params.top_p, top_k=params.top_k, seed=chooser.seed
        )
        return self.open(generation, EdgeStats())


class EdgeTarget(CacheElsewhere):  # the server keeps its own prefix cache
    """One edge generation's sequence (``Target`` protocol; module docstring), and the ``drafter`` that
    drafts for it."""

    returns_logits = False
    prefill_predicts_next = False  # every verification is a round trip, an empty draft's too

    def __init__(self, link: EdgeLink, drafter: EdgeDrafter) -> None:
        self.link, self.drafter = link, drafter
        self.context: list[int] = []
        self.verified: list[bool] = []  # per committed token after the prompt: confirmed by the server
        self._draft: Draft | None = None  # accepted, awaiting commit()
        self._from_server = True

    @property
    def context_length(self) -> int:
        return len(self.context)

    @property
    def max_length(self) -> int:
        return self.link.limits.max_length

    @property
    def max_branches(self) -> int:
        return max(1, self.link.limits.max_branches)

    @property
    def forward_passes(self) -> int:
        return self.link.forward_passes

    def prefill(self, context_ids: Sequence[int]) -> None:
        self.context = [int(t) for t in context_ids]
        self.link.start(self.context)

    def verify(self, draft: Draft) -> Verification:
        if self._draft is not None:
            raise RuntimeError("verify() twice without commit()")
        self._draft = draft
        if self.link.poll(self.context):
            answered = self._verify_online(draft)
            if answered is not None:
                self._from_server = True
                return answered
            self.link.poll(self.context)  # lost just now: start reconnecting at once
        self._from_server = False  # the local model stands in: its token, over an empty path
        return Verification.accepted(Acceptance((), self.drafter.choose_local(self.context)))

    def _verify_online(self, draft: Draft) -> Verification | None:
        """The server's decision on ``draft``; None when the server was lost on the way."""
        sent = self.drafter.sending(draft)  # the tree as drafted (distributions, repeated siblings) or None
        tree = sent.wire() if sent is not None else {"tokens": list(draft.tokens), "parents": list(draft.parents)}
        try:
            answer = self.link.verify(tree, self.drafter.draft_ahead)
        except ServerUnavailable:
            self.link.lose()
            return None
        except EdgeRefused as error:
            if error.status not in (404, 409):
                raise
            self.link.lose()  # the server forgot the session (restarted, idle timeout): reopen now
            return None
        path = [int(n) for n in answer["accepted_path"]]
        tokens = [int(t) for t in answer["accepted_tokens"]] + [int(answer["next_token"])]
        self.link.stats.sampled_verifications += bool(sent is not None and sent.qs)
        self.drafter.answered(sent, path, tokens)
        self.link.stats.record_step(len(draft), len(path), draft.depths)  # a verify step: the server answered
        merged = sent.draft.merged_nodes if sent is not None else range(len(draft))  # the sent tree -> ``draft``
        return Verification.accepted(Acceptance(tuple(merged[i] for i in path), tokens[-1]))

    def commit(self, path: Sequence[int], next_token: int) -> None:
        if self._draft is None:
            raise RuntimeError("commit() without verify()")
        tokens = [self._draft.tokens[i] for i in path] + [int(next_token)]
        self.context += tokens
        self.verified += [self._from_server] * len(tokens)
        if self._from_server:
            self.link.stats.verified_tokens += len(tokens)
        else:
            self.link.stats.unverified_tokens += len(tokens)
        self._draft = None

    def close(self) -> None:
        self.link.close()

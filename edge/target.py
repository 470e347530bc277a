"""EdgeModel and EdgeTarget: the verify server as the core's ``Model`` and ``Target`` for one edge
generation, with the laptop's model standing in while the server is out of reach.

``EdgeTarget.verify(draft)``, the link online (``EdgeLink``): sends the draft (the drafter's tree
with its draft distributions under sampling, ``EdgeDrafter.sending``) in one round trip, the
drafter drafting ahead while it is in flight; the server accepts (its own choices, or rejection
sampling over ``q``) and commits, and its acceptance comes back as ``Verification.decided``.
Offline, or when the server is lost during the call: the local model chooses the next token
(``EdgeDrafter.choose_local``), returned as an unverified decision, and the link starts
reconnecting. Every token emitted online is the server's choice or accepted by the server's
lossless rule, so greedy output equals the server model's greedy output and sampling keeps its
distribution; nothing already emitted is taken back. ``verified`` holds, per committed token,
whether the server confirmed it.
"""

from __future__ import annotations

from typing import Any, Sequence

from specdraft.acceptance import Acceptance
from specdraft.cost import PassCostProfile
from specdraft.draft import Draft
from specdraft.sampling import TokenChooser
from specdraft.served_text import ServedText
from specdraft.target import CacheElsewhere
from specdraft.verification import Verification

from .drafter import EdgeDrafter
from .link import EdgeLink
from .transport import EdgeRefused, ServerUnavailable


class EdgeModel(ServedText):
    """The served model seen from the laptop for one generation (``Model`` protocol): text through
    the ``local`` model (sharing the server's tokenizer), sequences through ``link``."""

    served_by = "is verified by a remote server"

    backend = "edge"
    exact = False  # tokens the local model writes while the server is lost are not the server's

    def __init__(self, link: EdgeLink, local: Any, drafter: EdgeDrafter) -> None:
        self.link, self.local, self.drafter = link, local, drafter
        self.name = f"edge @ {link.connection.url}"
        self.tokenizer = local.tokenizer
        self.cost = PassCostProfile()
        self.target: EdgeTarget | None = None  # the generation's, once created

    @property
    def max_length(self) -> int:
        return self.link.limits.max_length  # the server's, learnt when a session opens

    @property
    def vocab_size(self) -> int:
        return int(self.local.vocab_size)

    @property
    def eos_token_ids(self) -> frozenset[int]:
        return frozenset(self.local.eos_token_ids)

    @property
    def has_chat_template(self) -> bool:
        return bool(self.local.has_chat_template)

    def new_target(self, chooser: TokenChooser = TokenChooser()) -> "EdgeTarget":
        """The generation's target (the server samples with the link's parameters and seed, which
        the client gives the generator too)."""
        self.target = EdgeTarget(self.link, self.drafter)
        return self.target


class EdgeTarget(CacheElsewhere):  # the server keeps its own prefix cache
    """One edge generation's sequence (``Target`` protocol; module docstring)."""

    returns_logits = False
    prefill_predicts_next = False  # every verification is a round trip, an empty draft's too

    def __init__(self, link: EdgeLink, drafter: EdgeDrafter) -> None:
        self.link, self.drafter = link, drafter
        self.context: list[int] = []
        self.verified: list[bool] = []  # per committed token after the prompt
        self._draft: Draft | None = None  # decided, awaiting commit()
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
            decided = self._verify_online(draft)
            if decided is not None:
                self._from_server = True
                return decided
            self.link.poll(self.context)  # lost just now: start reconnecting at once
        self._from_server = False
        return Verification.decided(Acceptance((), self.drafter.choose_local(self.context)), verified=False)

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
        merged = sent.draft.merged_nodes if sent is not None else range(len(draft))  # the sent tree -> ``draft``
        return Verification.decided(Acceptance(tuple(merged[i] for i in path), tokens[-1]))

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

"""Edge sessions: one target KV cache per laptop client, held between its verify calls (docs/edge.md).

An ``EdgeSession`` wraps one ``Target`` of the served model (with the client's sampling and seed) and
the session's context. Each call validates every argument first, so that a refused call (a
``RequestError`` with a 4xx status and a code) leaves the session as it was:

- ``verify(draft, commit=True)``: one forward pass over the pending token and the draft tree. The
  session follows the target's own choices (``follow_choices``: greedy, or sample-and-compare, exact
  for any draft) or, for a sampling session whose draft carries its distributions (``DraftRows``),
  accepts by speculative sampling (``speculative_accept``, uniforms keyed by seed and position), and
  commits the path and next token itself. With ``commit=False`` it waits for ``commit(path,
  next_token)`` or a next ``verify`` carrying it as ``previous`` (``specdraft.edge.RemoteTarget``).
- ``append(tokens)``: the next user turn, one forward pass.

``EdgeSessionStore``: at most ``max_sessions_per_key`` per API key (another key's session is a 403),
idle ones closed after ``idle_timeout_s`` (swept on every call), a closed session's target freed at once.
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Sequence

from specdraft import ROOT, Draft, Model, SamplingParams, Target, TokenChooser
from specdraft.acceptance import Acceptance, follow_choices, speculative_accept
from specdraft.edge.trees import DraftRows  # noqa: F401  re-export: the wire's draft distributions, as the client builds them
from specdraft.prefix_cache import prefix_cache_for
from specdraft.sampling import PositionalRandom, warp

from .limits import check_settings
from .protocol.errors import RequestError, check_token_ids


@dataclass(frozen=True)
class EdgeConfig:
    """``max_sessions_per_key``: open sessions one API key may hold; ``idle_timeout_s``: a session
    unused this long is closed; ``max_length``: the longest context of a session (0: the model's);
    ``max_draft_nodes``: the most nodes one verification takes; ``max_branches``: the most
    root-to-leaf branches one verification takes (capped by the target's own limit);
    ``max_draft_prob_entries``: the longest (token, probability) list a draft node may carry."""

    max_sessions_per_key: int = 8
    idle_timeout_s: float = 300.0
    max_length: int = 0
    max_draft_nodes: int = 256
    max_branches: int = 64
    max_draft_prob_entries: int = 64

    def __post_init__(self) -> None:
        names = ("max_sessions_per_key", "max_draft_nodes", "max_branches", "max_draft_prob_entries")
        check_settings(self, {**dict.fromkeys(names, 1), "max_length": 0}, ("idle_timeout_s",))

    def session_length(self, model: Model) -> int:
        """The longest context of a session on ``model``: ``max_length``, or the model's when shorter or 0."""
        return model.max_length if not self.max_length else min(model.max_length, self.max_length)


def _merge_repeats(draft: Draft) -> tuple[Draft, list[int]]:
    """The tree without draft distributions, repeated siblings (independent draws of one token)
    merged into the first, and each node's index in it (``Draft.deterministic``, ``Draft.merged_nodes``)."""
    return draft.deterministic(), list(draft.merged_nodes)


def sampled_acceptance(
    draft: Draft, node_of: Sequence[int], logits, sampling: SamplingParams, seed: int, position: int
) -> Acceptance:
    """Speculative sampling over ``draft`` (nodes carrying ``q``) given the target's ``logits`` for
    the merged tree (``_merge_repeats``: row ``1 + node_of[i]`` predicts after node ``i``), warped
    by the session's ``sampling``, uniforms keyed by (``seed``, position) from ``position``."""
    rows = [0] + [1 + node_of[i] for i in range(len(draft))]
    return speculative_accept(draft, warp(logits, sampling).cpu()[rows], PositionalRandom(seed), position)


@dataclass
class VerifyOutcome:
    choices: list[int]  # the target's own token per row (1 + nodes)
    path: list[int]  # the path follow_choices accepts
    next_token: int
    committed: bool


@dataclass
class EdgeSession:
    """One client's sequence on the served model (use it under ``lock``)."""

    id: str
    owner: str
    model: Model
    target: Target
    context: list[int]
    max_length: int
    seed: int
    last_used: float = field(default_factory=time.monotonic)
    lock: threading.Lock = field(default_factory=threading.Lock)
    pending: Draft | None = None  # a verified draft waiting for its commit
    closed: bool = False
    sampling: SamplingParams = SamplingParams()

    @property
    def context_length(self) -> int:
        return len(self.context)

    @property
    def forward_passes(self) -> int:
        return int(self.target.forward_passes)

    # --- checks (nothing changes until every one has passed) ----------------------------------------
    def check_tokens(self, tokens: Sequence[int], param: str) -> None:
        check_token_ids(tokens, self.model.tokenizer.vocab_size, param)

    def check_path(self, draft: Draft, path: Sequence[int], param: str) -> None:
        """``path`` must run from the first level down the verified ``draft``, parent to child."""
        parent = ROOT
        for i, node in enumerate(path):
            if not 0 <= node < len(draft) or draft.parents[node] != parent:
                raise RequestError(
                    f"{param}[{i}] = {node} does not continue the path below node {parent} of the verified draft",
                    param,
                    code="invalid_path",
                )
            parent = node

    def check_room(self, draft: Draft, extra: int, config: EdgeConfig, branches_limit: int) -> None:
        if len(draft) > config.max_draft_nodes:
            raise RequestError(
                f"the draft has {len(draft)} nodes; this server verifies at most {config.max_draft_nodes}",
                "tokens",
                code="draft_too_large",
            )
        if len(draft.leaves) > branches_limit:
            raise RequestError(
                f"the draft has {len(draft.leaves)} branches; this server verifies at most {branches_limit}",
                "parents",
                code="draft_too_large",
            )
        room = self.max_length - (self.context_length + extra) - 1
        if len(draft) > max(room, 0) or room < 0:
            raise RequestError(
                f"the context holds {self.context_length + extra} of {self.max_length} tokens: a draft of "
                f"{len(draft)} nodes does not fit (at most {max(room, 0)})",
                "tokens",
                code="context_length_exceeded",
            )

    # --- calls ------------------------------------------------------------------------------------
    def verify(
        self,
        draft: Draft,
        commit: bool,
        previous: tuple[list[int], int] | None,
        config: EdgeConfig,
        branches_limit: int,
    ) -> VerifyOutcome:
        if previous is None and self.pending is not None:
            raise RequestError(
                "this session awaits the commit of its last verification: send it as previous (or POST .../commit)",
                "previous",
                409,
                "commit_pending",
            )
        if previous is not None and self.pending is None:
            raise RequestError(
                "previous commits a verification, but this session has none waiting",
                "previous",
                409,
                "no_commit_pending",
            )
        if draft.probs is not None and not commit:
            raise RequestError(
                "draft_probs need commit: true (the server accepts by rejection sampling and commits itself)",
                "commit",
                code="invalid_request",
            )
        self.check_tokens(draft.tokens, "tokens")
        extra = 0
        if previous is not None:
            assert self.pending is not None
            self.check_path(self.pending, previous[0], "previous.path")
            self.check_tokens([previous[1]], "previous.next_token")
            extra = len(previous[0]) + 1
        self.check_room(draft, extra, config, branches_limit)
        if previous is not None:
            self._commit(*previous)
        position = self.context_length  # of the token after the context
        merged, node_of = _merge_repeats(draft)  # the target verifies each distinct branch once
        verification = self.target.verify(merged)
        if draft.probs is not None and not self.sampling.greedy and verification.logits is not None:
            choices: list[int] = []
            accepted = sampled_acceptance(draft, node_of, verification.logits, self.sampling, self.seed, position)
        else:
            own = [verification.choice(row) for row in range(len(verification))]
            choices = [own[0]] + [own[1 + node_of[i]] for i in range(len(draft))]  # per node of the draft sent
            accepted = follow_choices(draft, choices.__getitem__)
        self.pending = merged
        if commit:
            self._commit([node_of[i] for i in accepted.path], accepted.next_token)
        return VerifyOutcome(choices, list(accepted.path), accepted.next_token, commit)

    def commit(self, path: list[int], next_token: int) -> None:
        if self.pending is None:
            raise RequestError("this session has no verification waiting for a commit", None, 409, "no_commit_pending")
        self.check_path(self.pending, path, "path")
        self.check_tokens([next_token], "next_token")
        self._commit(path, next_token)

    def _commit(self, path: list[int], next_token: int) -> None:
        assert self.pending is not None
        self.target.commit(path, next_token)
        self.context += [self.pending.tokens[i] for i in path] + [int(next_token)]
        self.pending = None

    def append(self, tokens: list[int], config: EdgeConfig) -> None:
        if self.pending is not None:
            raise RequestError(
                "this session awaits the commit of its last verification; commit before appending",
                None,
                409,
                "commit_pending",
            )
        self.check_tokens(tokens, "tokens")
        if self.context_length + len(tokens) > self.max_length:
            raise RequestError(
                f"the context holds {self.context_length} of {self.max_length} tokens: {len(tokens)} more do not fit",
                "tokens",
                code="context_length_exceeded",
            )
        chain = Draft.chain(tokens[:-1])  # one pass over the pending token and all but the last
        self.target.verify(chain)
        self.target.commit(list(range(len(chain))), tokens[-1])
        self.context += tokens

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.target.close()


class EdgeSessionStore:
    """The open sessions of one app (thread-safe)."""

    def __init__(self, config: EdgeConfig = EdgeConfig(), clock=time.monotonic) -> None:
        self.config = config
        self._clock = clock
        self._sessions: dict[str, EdgeSession] = {}
        self._lock = threading.Lock()
        self.closed_idle = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def open(
        self, model: Model, owner: str, prompt: list[int], sampling: SamplingParams, seed: int | None
    ) -> EdgeSession:
        """A new session of ``owner`` holding ``prompt`` (prefilled: one forward pass)."""
        self.sweep()
        max_length = self.config.session_length(model)
        if len(prompt) >= max_length:
            raise RequestError(
                f"the prompt holds {len(prompt)} tokens; a session holds at most {max_length} (prompt and answer)",
                "prompt",
                code="context_length_exceeded",
            )
        with self._lock:
            held = sum(1 for s in self._sessions.values() if s.owner == owner)
            if held >= self.config.max_sessions_per_key:
                raise RequestError(
                    f"this API key holds {held} open edge sessions, the most it may; close one (DELETE) first",
                    None,
                    429,
                    "too_many_sessions",
                )
            seed = secrets.randbits(62) if seed is None else seed
            session = EdgeSession(
                "edge-" + secrets.token_hex(12),
                owner,
                model,
                model.new_target(TokenChooser(sampling, seed)),
                list(prompt),
                max_length,
                seed,
                self._clock(),
                sampling=sampling,
            )
            self._sessions[session.id] = session  # counted at once, so concurrent opens keep the limit
        try:
            with session.lock:
                _prefill(model, session.target, prompt)
        except BaseException:
            self.close(session.id, owner)
            raise
        return session

    def get(self, session_id: str, owner: str) -> EdgeSession:
        """The open session ``session_id`` of ``owner`` (404 unknown or closed, 403 another key's)."""
        self.sweep()
        with self._lock:
            session = self._sessions.get(session_id)
        if session is None:
            raise RequestError(
                f"no open edge session {session_id!r} (closed, timed out after {self.config.idle_timeout_s:g} s idle, "
                "or never opened)",
                None,
                404,
                "session_not_found",
            )
        if session.owner != owner:
            raise RequestError("this edge session belongs to another API key", None, 403, "session_forbidden")
        session.last_used = self._clock()
        return session

    def close(self, session_id: str, owner: str) -> None:
        session = self.get(session_id, owner)
        with self._lock:
            self._sessions.pop(session_id, None)
        with session.lock:
            session.close()

    def sweep(self) -> int:
        """Close sessions idle longer than ``idle_timeout_s`` (a session in use is never idle)."""
        now = self._clock()
        with self._lock:
            idle = [
                s
                for s in self._sessions.values()
                if now - s.last_used > self.config.idle_timeout_s and not s.lock.locked()
            ]
            for session in idle:
                del self._sessions[session.id]
        for session in idle:
            with session.lock:
                session.close()
        self.closed_idle += len(idle)
        return len(idle)


def _prefill(model: Model, target: Target, prompt: list[int]) -> None:
    """The session's prefill, from the model's prefix cache unless it is off (so a chat's next turn, or
    another laptop's same system prompt, is not computed again); the target stores its sequence there
    when the session closes."""
    cache = prefix_cache_for(model)
    if cache is None:
        target.prefill(prompt)
    else:
        target.prefill_cached(prompt, cache)

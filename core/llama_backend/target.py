"""One sequence on a llama.cpp model: ``LlamaSession`` (feed, roll back; also a draft model's cache)
and ``LlamaCppTarget`` (the ``Target`` protocol: prefill, verify a token tree in ONE ``llama_decode``
batch, commit the accepted path).

The main sequence is sequence 0. To verify a tree with B leaves, leaf j gets sequence j; the
context is shared with sequences 1..B-1 (``seq_cp``: no keys are copied in a unified cache); every
node joins the sequences of the leaves below it, at position ``context + depth - 1``. A node then
sees exactly the context and its ancestors (``library``), so each row equals what a chain of that
branch would give. Commit keeps the accepted path's sequence (``seq_keep``), cuts what lies past the
path (``seq_rm``) and renames it to sequence 0; the path's cells are already at consecutive
positions, so nothing moves.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..draft import ROOT, Draft
from ..sampling import TokenChooser
from ..verification import Verification

if TYPE_CHECKING:
    from .model import LlamaCppModel

MAIN = 0  # the sequence id of the committed context


class LlamaSession:
    """A context holding one sequence (``MAIN``) of ``len(self)`` tokens."""

    def __init__(self, model: "LlamaCppModel") -> None:
        self.model = model
        self.context = model.acquire_context()
        self.length = 0

    def __len__(self) -> int:
        return self.length

    def run_batch(self, tokens: Sequence[int], positions: Sequence[int], seq_ids: Sequence[Sequence[int]], logits: Sequence[bool], timed: bool) -> np.ndarray:
        with self.model.lock:
            start = time.perf_counter()
            rows = self.context.decode(tokens, positions, seq_ids, logits)
            if timed:
                self.model.cost.record(len(tokens), time.perf_counter() - start)
        return rows

    def feed(self, tokens: Sequence[int], parents: Sequence[int] | None = None, all_logits: bool = True) -> np.ndarray:
        """Append a chain of ``tokens`` (``parents`` must be None or a chain); returns their
        logits ``[len(tokens), vocab]`` (only the last row with ``all_logits=False``). Long inputs
        run in batches of the context's size; only passes with every row's logits are timed."""
        if parents is not None and any(p != i - 1 for i, p in enumerate(parents)):
            raise ValueError("a session feeds chains; trees are verified by LlamaCppTarget")
        if self.length + len(tokens) > self.context.n_ctx:
            raise ValueError(f"{self.length + len(tokens)} tokens exceed the context of {self.context.n_ctx}")
        rows = []
        size = self.context.n_batch
        for start in range(0, len(tokens), size):
            chunk = list(tokens[start : start + size])
            last = start + size >= len(tokens)
            wanted = [all_logits or (last and i == len(chunk) - 1) for i in range(len(chunk))]
            positions = range(self.length, self.length + len(chunk))
            rows.append(self.run_batch(chunk, list(positions), [(MAIN,)] * len(chunk), wanted, timed=all_logits))
            self.length += len(chunk)
        return np.concatenate(rows) if len(rows) > 1 else rows[0]

    def truncate(self, length: int) -> None:
        if not 0 <= length <= self.length:
            raise ValueError(f"cannot truncate a sequence of {self.length} tokens to {length}")
        if length < self.length:
            self.context.seq_rm(MAIN, length, -1)
        self.length = length

    def close(self) -> None:
        if self.context is not None:
            self.model.release_context(self.context)
            self.context = None

    def __del__(self) -> None:  # a drafter's session has no explicit end
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass


def branch_sequences(draft: Draft) -> list[tuple[int, ...]]:
    """For each node, the sequence ids of the leaves below it (leaf ``j`` of ``draft.leaves`` has
    sequence ``j``), first the smallest; the leaf below the first child comes first."""
    sets: list[list[int]] = [[] for _ in draft.tokens]
    for seq, leaf in enumerate(draft.leaves):
        node = leaf
        while node != ROOT:
            sets[node].append(seq)
            node = draft.parents[node]
    return [tuple(sorted(s)) for s in sets]


class LlamaCppTarget:
    """The ``Target`` protocol on a llama.cpp context (one request)."""

    returns_logits = True

    def __init__(self, model: "LlamaCppModel", chooser: TokenChooser = TokenChooser()) -> None:
        self.model = model
        self.chooser = chooser
        self.session = LlamaSession(model)
        self.forward_passes = 0
        self._pending: int | None = None
        self._next_logits: np.ndarray | None = None  # [vocab] after the prefill
        self._verified: tuple[Draft, int] | None = None  # the draft and the position of its first node

    @property
    def context_length(self) -> int:
        return len(self.session) + (self._pending is not None)

    @property
    def max_length(self) -> int:
        return self.model.max_length

    @property
    def max_branches(self) -> int:
        return self.session.context.n_seq

    def prefill(self, context_ids: Sequence[int]) -> None:
        if not context_ids:
            raise ValueError("the context must hold at least one token")
        if len(self.session) or self._pending is not None:
            raise RuntimeError("prefill() starts a sequence; this target already holds one")
        self.forward_passes += 1
        self._next_logits = self.session.feed(context_ids, all_logits=False)[-1]

    def verify(self, draft: Draft) -> Verification:
        if self._verified is not None:
            raise RuntimeError("verify() twice without commit()")
        position = self.context_length  # where row 0's token goes
        if len(draft) + 1 > self.session.context.n_batch:
            raise ValueError(f"a draft of {len(draft)} nodes exceeds the batch of {self.session.context.n_batch}")
        if self._next_logits is not None:  # first step: the prefill already predicted row 0
            self._verified = (draft, position)
            rows = self._decode_tree(draft, pending=None)
            logits = np.concatenate([self._next_logits[None], rows]) if len(draft) else self._next_logits[None]
        else:
            if self._pending is None:
                raise RuntimeError("verify() before prefill()")
            self._verified = (draft, position)
            logits = self._decode_tree(draft, pending=self._pending)
        return Verification.from_logits(logits, draft, position, self.chooser)

    def _decode_tree(self, draft: Draft, pending: int | None) -> np.ndarray:
        """One batch: the pending token (if any) and every node; rows of logits for all of them."""
        session = self.session
        if pending is None and not len(draft):
            return np.zeros((0, self.model.vocab_size), dtype=np.float32)
        branches = max(1, len(draft.leaves))
        for seq in range(1, branches):
            session.context.seq_cp(MAIN, seq)
        base = len(session)  # position of the pending token, or of the first node
        tokens: list[int] = []
        positions: list[int] = []
        seq_ids: list[tuple[int, ...]] = []
        if pending is not None:
            tokens.append(pending)
            positions.append(base)
            seq_ids.append(tuple(range(branches)))
        first_node = base + (pending is not None)
        tokens += draft.tokens
        positions += [first_node + depth - 1 for depth in draft.depths]
        seq_ids += branch_sequences(draft)
        self.forward_passes += 1
        return session.run_batch(tokens, positions, seq_ids, [True] * len(tokens), timed=True)

    def commit(self, path: Sequence[int], next_token: int) -> None:
        if self._verified is None:
            raise RuntimeError("commit() without verify()")
        draft, position = self._verified
        self._verified = None
        session = self.session
        if self._pending is not None:
            session.length += 1  # the pending token is in the cache now
        first_node = len(session)
        if len(draft):
            leaf_seq = draft.leaves.index(draft.leaf_below(path[-1])) if path else MAIN
            context = session.context
            context.seq_keep(leaf_seq)  # drops every other branch
            context.seq_rm(leaf_seq, first_node + len(path), -1)  # and what lies past the path
            if leaf_seq != MAIN:
                context.seq_cp(leaf_seq, MAIN)
                context.seq_rm(leaf_seq)
        session.length = first_node + len(path)
        self._next_logits = None
        self._pending = int(next_token)

    def close(self) -> None:
        self.session.close()

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

Prefix cache (``specdraft.prefix_cache``): a closing target stores sequence 0's state (llama.cpp's
serialised cells: positions, keys, values, copied out of the context); a new target restores the
longest cached prefix into its own empty context (the cells land in position order at its start)
and cuts what lies past the shared prefix, then prefills the rest.
"""

from __future__ import annotations

import time
from typing import Sequence

import numpy as np

from ...draft import ROOT, Draft
from ...prefix_cache import PrefixHit
from ...sampling import TokenChooser
from ..target_base import SessionTarget
from .runtime import LlamaRuntime

MAIN = 0  # the sequence id of the committed context


class LlamaSession:
    """A context holding one sequence (``MAIN``) of ``len(self)`` tokens."""

    def __init__(self, model: LlamaRuntime) -> None:
        self.model = model
        self.context = model.acquire_context()
        self.length = 0

    def __len__(self) -> int:
        return self.length

    def run_batch(
        self,
        tokens: Sequence[int],
        positions: Sequence[int],
        seq_ids: Sequence[Sequence[int]],
        logits: Sequence[bool],
        timed: bool,
    ) -> np.ndarray:
        with self.model.lock:
            start = time.perf_counter()
            rows = self.context.decode(tokens, positions, seq_ids, logits)
            if timed:
                self.model.cost.record(len(tokens), time.perf_counter() - start)
        return rows

    def feed(self, tokens: Sequence[int], parents: Sequence[int] | None = None, all_logits: bool = True) -> np.ndarray:
        """Append a chain of ``tokens`` (``parents`` must be None or a chain); returns their
        logits ``[len(tokens), vocab]`` (only the last row with ``all_logits=False``). Long inputs
        run in batches of the context's size (``n_prefill`` tokens with ``all_logits=False``: a
        prompt); only passes with every row's logits are timed."""
        if parents is not None and any(p != i - 1 for i, p in enumerate(parents)):
            raise ValueError("a session feeds chains; trees are verified by LlamaCppTarget")
        if self.length + len(tokens) > self.context.n_ctx:
            raise ValueError(f"{self.length + len(tokens)} tokens exceed the context of {self.context.n_ctx}")
        rows = []
        size = self.context.n_batch if all_logits else self.context.n_prefill
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

    def snapshot(self) -> tuple[object, int]:
        """(a copy of the sequence's state, its bytes), for ``PrefixCache.insert``."""
        state = self.context.seq_state(MAIN)
        return state, len(state)

    def restore(self, state, stored: int, length: int) -> None:
        """Start this empty session from the first ``length`` of the ``stored`` tokens ``state``
        (``snapshot``'s) holds; ``state`` is only read."""
        if self.length:
            raise RuntimeError("restore() needs an empty session")
        if not 0 < length <= stored <= self.context.n_ctx:
            raise ValueError(f"cannot restore {length} of {stored} tokens into a context of {self.context.n_ctx}")
        self.context.set_seq_state(MAIN, state)
        if length < stored:
            self.context.seq_rm(MAIN, length, -1)
        self.length = length

    def close(self) -> None:
        if self.context is not None:
            self.model.release_context(self.context)
            self.context = None  # type: ignore[assignment]  # closed: the session is never used again

    def __del__(self) -> None:  # a drafter's session has no explicit end
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass


def main_chain(draft: Draft) -> list[int]:
    """The nodes reached from ROOT by always taking the first child: the branch the drafter ranks first."""
    chain, node = [], ROOT
    while draft.children(node):
        node = draft.children(node)[0]
        chain.append(node)
    return chain


def batch_layout(draft: Draft) -> tuple[list[int], list[tuple[int, ...]]]:
    """(the order nodes go into the batch, each node's sequence ids). The main chain goes first, so
    that when the target keeps a prefix of it, the kept cells directly follow the context in the
    cache and what is dropped lies after them. Leaves get sequences in that order (the main
    chain's leaf is ``MAIN``); a node belongs to the sequences of the leaves below it."""
    chain = main_chain(draft)
    on_chain = set(chain)
    order = chain + [i for i in range(len(draft)) if i not in on_chain]
    is_leaf = set(draft.leaves)
    leaves = [i for i in order if i in is_leaf]
    sets: list[list[int]] = [[] for _ in draft.tokens]
    for seq, leaf in enumerate(leaves):
        node = leaf
        while node != ROOT:
            sets[node].append(seq)
            node = draft.parents[node]
    return order, [tuple(sorted(ids)) for ids in sets]


class LlamaCppTarget(SessionTarget):
    """The ``Target`` protocol on a llama.cpp context (one request; ``SessionTarget`` holds the
    bookkeeping and the prefix cache).

    Exactness needs the cache's cells in position order: attention sums over cells in cell order,
    and another order rounds differently. A kept prefix of the main chain is in order already
    (``batch_layout``); a path through another branch is dropped from the cache and its tokens are
    run again at the front of the next verification (the target's leading tokens), a few more
    tokens in that pass.
    """

    def __init__(self, model: LlamaRuntime, chooser: TokenChooser = TokenChooser()) -> None:
        super().__init__(model, chooser)
        self.session = LlamaSession(model)

    @property
    def max_branches(self) -> int:
        return self.session.context.n_seq

    def _cache_length(self) -> int:
        return len(self.session)

    def _run_prompt(self, tokens: list[int]) -> np.ndarray:
        return self.session.feed(tokens, all_logits=False)

    def _check_draft(self, draft: Draft) -> None:
        if max(1, len(self._leading)) + len(draft) > self.session.context.n_batch:
            raise ValueError(f"a draft of {len(draft)} nodes exceeds the batch of {self.session.context.n_batch}")

    def _run_draft(self, draft: Draft, leading: list[int]) -> np.ndarray:
        """One batch: the ``leading`` tokens (re-fed ones, then the pending one) and every node;
        returns logits rows for the last leading token and each node, in draft order."""
        session = self.session
        if not leading and not len(draft):
            return np.zeros((0, self.model.vocab_size), dtype=np.float32)
        order, node_seqs = batch_layout(draft)
        branches = max(1, len(draft.leaves))
        for seq in range(1, branches):
            session.context.seq_cp(MAIN, seq)
        base = len(session)
        everyone = tuple(range(branches))
        tokens = list(leading) + [draft.tokens[i] for i in order]
        positions = list(range(base, base + len(leading)))
        first_node = base + len(leading)
        positions += [first_node + draft.depths[i] - 1 for i in order]
        seq_ids = [everyone] * len(leading) + [node_seqs[i] for i in order]
        wanted = [i == len(leading) - 1 for i in range(len(leading))] + [True] * len(order)
        rows = session.run_batch(tokens, positions, seq_ids, wanted, timed=True)
        out = np.empty_like(rows)
        head = 1 if leading else 0
        out[:head] = rows[:head]
        out[[head + i for i in order]] = rows[head:]
        return out

    def _join(self, first: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return np.concatenate([first[None], rows])

    def _keep(self, draft: Draft, path: list[int], first_node: int) -> int:
        kept = 0
        if len(draft):
            in_order = path == main_chain(draft)[: len(path)]
            kept = len(path) if in_order else 0
            context = self.session.context
            context.seq_keep(MAIN)  # drops every branch but the main chain
            context.seq_rm(MAIN, first_node + kept, -1)  # and what lies past the kept prefix
        self.session.length = first_node + kept
        return kept

    def _restore(self, hit: PrefixHit) -> None:
        self.session.restore(hit.entry.state, len(hit.entry), hit.length)

    def _snapshot(self, length: int) -> tuple[object, int]:
        return self.session.snapshot()  # the whole sequence: ``_offer`` checked it holds ``length``

    def _release(self) -> None:
        self.session.close()

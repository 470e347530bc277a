"""Token trees the edge drafter proposes: core ``Draft``s built from the local model's guesses, with
what the drafter needs to remember about how each was built (``Proposal``). Under sampling every
node carries its draft distribution ``q`` (a short (token, probability) list, ``DraftRows``).

Two builders, one per decoding mode. Both put the **main chain** (the local model's own
continuation, ``Guess.token`` at each depth: the branch the pipeline assumes accepted) first at
every level, so a tree of width 1 is exactly the chain a chain drafter would send.

- ``greedy_tree`` (greedy decoding): best-first by **path probability** (the product, from the root,
  of each node's probability of being the target's choice), under a node budget and a branch limit.
  The frontier holds every node's ``width`` likeliest children; the likeliest frontier node joins
  the tree next. LLMCad splits its node budget between branches by a fixed max-min rule; taking the
  nodes with the highest path probabilities is the better rule for the same budget: a node is
  accepted with its path probability, so the expected number of accepted tokens is the sum of the
  tree's path probabilities, and no other tree of that many nodes has a larger sum (a child is never
  likelier than its parent, so the best ``n`` nodes always form a tree). A node's probability is the
  draft model's confidence **calibrated online** (``Calibration``): the share of earlier drafted
  nodes of the same rank and confidence band the target accepted, with the confidence itself as the
  prior. (A draft model that is its target's twin accepts every top-1 token and no runner-up: its
  tree becomes a chain; a weak one spreads its budget over branches.)
  **Trigger**: drafting stops, and the tree is sent, when the best frontier node's path probability
  falls below ``threshold`` (the adaptive threshold; None: fill the budget) or the budget is spent.
  A node's own children are computed (one local pass) only when it is the best of the frontier, so
  the last level costs no pass.
- ``sampled_tree`` (sampling): level by level down the main chain; at a depth where the draft is
  unsure (its top ``q`` probability below ``alt_below``) extra **independent draws from the same q**
  join as siblings (SpecInfer's multi-candidate condition; they may repeat a token). How many
  siblings a level gets is decided from ``q`` and the budget left by the levels above, before
  anything at that level is drawn: a tree shape that looked at the draws would bias them. The chain
  stops when its cumulative ``q`` probability falls below ``threshold`` or the budget is spent.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from specdraft.draft import ROOT, Draft

from .guesses import Guess, draw

Q = tuple[tuple[int, ...], tuple[float, ...]]  # a draft distribution: tokens, probabilities


class DraftRows:
    """Draft distributions as (tokens, probabilities) per node, seen as the dense ``[num_nodes,
    vocab]`` rows ``Draft.probs`` holds (a row is built when it is read). ``vocab`` None: one past
    the largest token listed."""

    def __init__(self, rows: Sequence[tuple[Sequence[int], Sequence[float]]], vocab: int | None = None) -> None:
        self.rows = list(rows)
        self.vocab = vocab if vocab is not None else 1 + max((max(tokens) for tokens, _ in self.rows), default=0)

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self.rows), self.vocab)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return DraftRows(self.rows[index], self.vocab)
        tokens, probs = self.rows[index]
        row = np.zeros(self.vocab, dtype=np.float64)
        row[list(tokens)] = probs
        return row


@dataclass(frozen=True)
class Proposal:
    """A drafted tree and how it was drafted: ``n_main`` main-chain nodes (depths 1..n_main, each
    the first child of its parent), ``side_passes`` local passes spent off the main chain, per node
    its ``ranks`` among its parent's guesses and its draft ``confidences`` (greedy), and ``qs``
    (sampling: each node's ``q``, also ``draft.probs``)."""

    draft: Draft
    n_main: int = 0
    side_passes: int = 0
    ranks: tuple[int, ...] = ()
    confidences: tuple[float, ...] = ()
    qs: tuple[Q, ...] = ()

    def __len__(self) -> int:
        return len(self.draft)

    @property
    def tokens(self) -> list[int]:
        return list(self.draft.tokens)

    @property
    def parents(self) -> list[int]:
        return list(self.draft.parents)

    @property
    def leaves(self) -> int:
        """How many root-to-leaf branches the tree has."""
        return len(self.draft.leaves)

    def wire(self) -> dict:
        """The verify call's tree fields (``draft_probs`` only for a sampled tree)."""
        body: dict = {"tokens": self.tokens, "parents": self.parents}
        if self.qs:
            body["draft_probs"] = [{"tokens": list(t), "probs": list(p)} for t, p in self.qs]
        return body


class _Nodes:
    """A tree while it grows (nodes appended in topological order)."""

    def __init__(self) -> None:
        self.tokens: list[int] = []
        self.parents: list[int] = []
        self.qs: list[Q] = []
        self.ranks: list[int] = []
        self.confidences: list[float] = []
        self.n_main = self.side_passes = self.leaves = 0
        self._has_child: set[int] = set()

    def __len__(self) -> int:
        return len(self.tokens)

    def add(self, token: int, parent: int, q: Q | None = None) -> int:
        self.leaves += not (parent != ROOT and parent not in self._has_child)
        self._has_child.add(parent)
        self.tokens.append(int(token))
        self.parents.append(parent)
        if q is not None:
            self.qs.append(q)
        return len(self.tokens) - 1

    def path_tokens(self, node: int) -> list[int]:
        out: list[int] = []
        while node != ROOT:
            out.append(self.tokens[node])
            node = self.parents[node]
        return out[::-1]

    def proposal(self) -> Proposal:
        probs = DraftRows(self.qs) if self.qs else None
        return Proposal(
            Draft(tuple(self.tokens), tuple(self.parents), probs),
            self.n_main,
            self.side_passes,
            tuple(self.ranks),
            tuple(self.confidences),
            tuple(self.qs),
        )


class Calibration:
    """P(the target chooses a drafted node | its parent was reached), learnt from verifications, per
    (rank among the parent's guesses, confidence band); ``prior`` pseudo-observations at the draft
    model's own confidence. Shared by a client's runs; updates are a few float additions."""

    BANDS = (0.1, 0.3, 0.5, 0.7, 0.9)

    def __init__(self, prior: float = 4.0) -> None:
        self.prior = prior
        self.hits: dict[tuple[int, int], float] = {}
        self.trials: dict[tuple[int, int], float] = {}

    def _key(self, rank: int, confidence: float) -> tuple[int, int]:
        return min(rank, 2), sum(confidence >= b for b in self.BANDS)

    def __call__(self, rank: int, confidence: float) -> float:
        key = self._key(rank, confidence)
        return (self.hits.get(key, 0.0) + self.prior * confidence) / (self.trials.get(key, 0.0) + self.prior)

    def observe(self, tree: Proposal, path: Sequence[int]) -> None:
        """Learn from one answer: every drafted child of a node the accepted ``path`` reached."""
        if not tree.ranks:
            return
        on_path = set(path)
        parents = tree.draft.parents
        for parent in (ROOT, *path):
            for child, p in enumerate(parents):
                if p == parent:
                    key = self._key(tree.ranks[child], tree.confidences[child])
                    self.trials[key] = self.trials.get(key, 0.0) + 1.0
                    self.hits[key] = self.hits.get(key, 0.0) + (child in on_path)


def greedy_tree(
    main: Callable[[int], Guess],
    side: Callable[[list[int]], Guess],
    budget: int,
    threshold: float | None,
    width: int,
    max_leaves: int,
    calibration: Callable[[int, float], float] = lambda rank, p: p,
) -> Proposal:
    """Best-first tree (see the module docstring). ``main(d)``: the guess after the main chain's
    first ``d`` tokens (0: after the context); ``side(path)``: the guess after ``path`` (tokens from
    the root) off the main chain. ``width``: children considered per node (1: a chain).
    ``calibration(rank, confidence)``: a node's probability of acceptance (default: its confidence)."""
    tree = _Nodes()
    if budget <= 0:
        return tree.proposal()
    heap: list[
        tuple[float, int, int, int, int, float, int]
    ] = []  # (-path prob, order, kind, parent/node, token, prob, rank)
    order = 0
    depth_of: dict[int, int] = {}
    on_main: dict[int, bool] = {}
    prob_of: dict[int, float] = {}

    def push_children(node: int, guess: Guess, path_prob: float, main_line: bool) -> None:
        nonlocal order
        for rank, (token, p) in enumerate(guess.top[:width] or ((guess.token, guess.prob),)):
            order += 1
            # the main child first among equals; its flag rides on the kind (0: main child, 1: other)
            kind = 0 if main_line and token == guess.token else 1
            heapq.heappush(heap, (-(path_prob * calibration(rank, p)), order, kind, node, token, p, rank))

    push_children(ROOT, main(0), 1.0, True)
    while heap and len(tree) < budget:
        neg, _, kind, parent, token, p, rank = heapq.heappop(heap)
        path_prob = -neg
        if threshold is not None and len(tree) > 0 and path_prob < threshold:
            break
        if kind == 2:  # expand node ``parent``: its children join the frontier
            node = parent
            if on_main[node]:
                guess = main(depth_of[node])
            else:
                guess = side(tree.path_tokens(node))
                tree.side_passes += 1
            push_children(node, guess, prob_of[node], on_main[node])
            continue
        if parent in tree._has_child and tree.leaves + 1 > max_leaves:
            continue  # a new branch past the server's limit
        node = tree.add(token, parent)
        tree.ranks.append(rank)
        tree.confidences.append(p)
        depth_of[node] = 1 if parent == ROOT else depth_of[parent] + 1
        on_main[node] = kind == 0
        prob_of[node] = path_prob
        tree.n_main += on_main[node]
        if len(tree) < budget:
            order += 1
            heapq.heappush(heap, (-path_prob, order, 2, node, -1, 1.0, 0))
    return tree.proposal()


def sampled_tree(
    main: Callable[[int], Guess],
    budget: int,
    threshold: float | None,
    alt_below: float,
    siblings: int,
    max_leaves: int,
    seed: int,
) -> Proposal:
    """Chain of ``q`` draws with independent sibling draws where unsure (see the module docstring).
    ``main(d)`` must carry ``q`` and its index-0 draw as ``token``; siblings are draws 1, 2, ..."""
    tree = _Nodes()
    parent, confidence = ROOT, 1.0
    while len(tree) < budget:
        guess = main(tree.n_main)
        assert guess.q is not None, "a sampled tree needs guesses drawn from q"
        left = budget - len(tree) - 1  # room after this level's main node
        extra = 0
        if guess.confidence < alt_below:  # decided from q and the levels above only
            extra = max(0, min(siblings, left, max_leaves - max(tree.leaves, 1)))
        node = tree.add(guess.token, parent, guess.q)
        tree.n_main += 1
        for j in range(1, extra + 1):
            token, _ = draw(guess.q, seed, guess.position, j)
            tree.add(token, parent, guess.q)
        parent = node
        confidence *= guess.prob
        if threshold is not None and confidence < threshold:
            break
    return tree.proposal()


def main_chain_tokens(tree: Proposal) -> list[int]:
    """The main chain's tokens in the tree (nodes flagged main, root to leaf)."""
    nodes, parent = [], ROOT
    for i, p in enumerate(tree.draft.parents):
        if len(nodes) == tree.n_main:
            break
        if p == parent:
            nodes.append(i)
            parent = i
    return [tree.draft.tokens[i] for i in nodes]

"""TokenTrie: candidate continuations merged on shared prefixes and pruned to a node budget, as a
``Draft``. Shared by the reference (LLMA) and the datastore (REST) drafters.

Words:

- **branch**: one candidate continuation (a token sequence), added with a **weight**: how many
  matches support it. Identical branches merge completely, branches with a common prefix share its
  nodes, so siblings never repeat a token.
- a node's **weight** is the sum of the weights of the branches through it (never more than its
  parent's); its **priority** is ``weight * depth_decay ** (depth - 1)`` (depth 1 = a child of the
  context). ``depth_decay`` 1 ranks by frequency alone (REST); below 1 it also models that every
  further copied token is a little less likely to be right, which lets a better-supported branch
  run deeper before a weaker one gets its first node.

Selection (``select``, pinned in tests): best-first from the first level. Repeatedly take the
frontier node of highest priority; ties go to the shallower node, then to the node created first
(branches are inserted in the caller's order, so on a tie the earlier branch wins); its children
join the frontier. Stop at ``budget`` nodes. Every chosen node's parent is chosen before it, so the
result is a valid tree in topological order, and because priorities never grow with depth it is
exactly the ``budget`` nodes that come first in (priority desc, depth asc, creation asc) order.
"""

from __future__ import annotations

import heapq
from typing import Sequence

from specdraft import ROOT, Draft


class TokenTrie:
    """A trie of token sequences with per-node weights. Node ids are creation order."""

    def __init__(self) -> None:
        self.tokens: list[int] = []
        self.parents: list[int] = []
        self.depths: list[int] = []
        self.weights: list[float] = []
        self._child: dict[tuple[int, int], int] = {}  # (parent node, token) -> node
        self._children: dict[int, list[int]] = {}  # parent node -> children in creation order

    def __len__(self) -> int:
        return len(self.tokens)

    def add(self, branch: Sequence[int], weight: float = 1.0) -> None:
        """Add ``branch`` with ``weight`` (> 0) to every node on its path, creating missing nodes."""
        if weight <= 0:
            raise ValueError(f"a branch's weight must be > 0, got {weight}")
        node = ROOT
        for depth, token in enumerate(branch, start=1):
            token = int(token)
            child = self._child.get((node, token))
            if child is None:
                child = len(self.tokens)
                self.tokens.append(token)
                self.parents.append(node)
                self.depths.append(depth)
                self.weights.append(0.0)
                self._child[(node, token)] = child
                self._children.setdefault(node, []).append(child)
            self.weights[child] += weight
            node = child

    def priority(self, node: int, depth_decay: float = 1.0) -> float:
        return self.weights[node] * depth_decay ** (self.depths[node] - 1)

    def select(self, budget: int, depth_decay: float = 1.0) -> list[int]:
        """Up to ``budget`` node ids, best first (see the module docstring); parents precede children."""
        chosen: list[int] = []
        frontier: list[tuple[float, int, int]] = []  # (-priority, depth, node)

        def push_children(parent: int) -> None:
            for child in self._children.get(parent, ()):
                heapq.heappush(frontier, (-self.priority(child, depth_decay), self.depths[child], child))

        push_children(ROOT)
        while frontier and len(chosen) < budget:
            node = heapq.heappop(frontier)[2]
            chosen.append(node)
            push_children(node)
        return chosen

    def to_draft(self, budget: int, depth_decay: float = 1.0) -> Draft:
        """The selected nodes as a deterministic ``Draft`` (nodes in selection order)."""
        chosen = self.select(budget, depth_decay)
        draft_index = {node: i for i, node in enumerate(chosen)}
        parents = tuple(ROOT if self.parents[node] == ROOT else draft_index[self.parents[node]] for node in chosen)
        return Draft(tuple(self.tokens[node] for node in chosen), parents)

"""Draft: a token tree proposed over the current context.

Words used throughout specdraft:

- **context**: every token the target has committed so far (prompt + generated).
- **draft**: a tree of proposed next tokens. Node ``i`` has a token id and a parent index; parent
  ``ROOT`` (-1) means the node continues the context directly. A **chain** is a tree in which every
  node's parent is the node before it. Nodes are stored in topological order (a parent's index is
  always smaller than its children's), so any prefix of the node list is itself a valid draft.
- **draft distribution** ``q``: optionally, for each node, the probability distribution the drafter
  drew that node's token from (draft models have one; copies, spans and caches don't). A draft
  without distributions is *deterministic* and the verifier treats each node as one-hot.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Sequence

import numpy as np

ROOT = -1  # parent index of nodes that directly continue the context


@dataclass(frozen=True)
class Draft:
    """A token tree. ``tokens[i]`` has parent ``parents[i]`` (``ROOT`` or an index < i).

    ``probs`` is ``None`` (deterministic draft) or a float array ``[num_nodes, vocab_size]`` (a
    numpy array or a torch tensor: the core needs only ``.shape`` and row indexing) whose row ``i``
    is the draft distribution ``q`` that ``tokens[i]`` was sampled from. Siblings carrying
    distributions must be independent samples from the same ``q`` (SpecInfer's condition).
    Siblings never repeat a token in a deterministic draft. Nothing here needs torch.
    """

    tokens: tuple[int, ...] = ()
    parents: tuple[int, ...] = ()
    probs: Any = field(default=None, compare=False)  # None or [num_nodes, vocab_size]

    def __post_init__(self) -> None:
        if len(self.tokens) != len(self.parents):
            raise ValueError(f"{len(self.tokens)} tokens but {len(self.parents)} parents")
        for i, parent in enumerate(self.parents):
            if not ROOT <= parent < i:
                raise ValueError(f"node {i} has parent {parent}: parents must precede their children")
        if self.probs is not None and (len(self.probs.shape) != 2 or self.probs.shape[0] != len(self.tokens)):
            raise ValueError(f"probs must be [num_nodes={len(self.tokens)}, vocab], got {tuple(self.probs.shape)}")
        if self.probs is None:
            seen: set[tuple[int, int]] = set()
            for token, parent in zip(self.tokens, self.parents):
                if (parent, token) in seen:
                    raise ValueError(f"token {token} appears twice under parent {parent}")
                seen.add((parent, token))

    # --- construction -------------------------------------------------------------------------
    @classmethod
    def empty(cls) -> "Draft":
        return cls()

    @classmethod
    def chain(cls, tokens: Sequence[int], probs: Any = None) -> "Draft":
        """A single branch: node i's parent is node i-1."""
        tokens = tuple(int(t) for t in tokens)
        return cls(tokens, tuple(range(-1, len(tokens) - 1)), probs)

    @classmethod
    def from_branches(cls, branches: Sequence[Sequence[int]], max_nodes: int | None = None) -> "Draft":
        """A deterministic tree (a trie) holding each branch as a root-to-node path.

        Branches sharing a prefix share its nodes. Nodes are added branch by branch, in the given
        order, until ``max_nodes`` (so earlier branches are kept whole first). Empty branches are
        ignored.
        """
        tokens: list[int] = []
        parents: list[int] = []
        child_of: dict[tuple[int, int], int] = {}  # (parent, token) -> node
        for branch in branches:
            parent = ROOT
            for token in branch:
                token = int(token)
                node = child_of.get((parent, token))
                if node is None:
                    if max_nodes is not None and len(tokens) >= max_nodes:
                        break
                    node = len(tokens)
                    tokens.append(token)
                    parents.append(parent)
                    child_of[(parent, token)] = node
                parent = node
        return cls(tuple(tokens), tuple(parents))

    # --- shape ----------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def is_chain(self) -> bool:
        return all(parent == i - 1 for i, parent in enumerate(self.parents))

    @cached_property
    def depths(self) -> tuple[int, ...]:
        """Depth of each node: 1 for children of ROOT."""
        depths: list[int] = []
        for parent in self.parents:
            depths.append(1 if parent == ROOT else depths[parent] + 1)
        return tuple(depths)

    @property
    def max_depth(self) -> int:
        return max(self.depths, default=0)

    @cached_property
    def _children(self) -> dict[int, tuple[int, ...]]:
        children: dict[int, list[int]] = {}
        for i, parent in enumerate(self.parents):
            children.setdefault(parent, []).append(i)
        return {parent: tuple(kids) for parent, kids in children.items()}

    def children(self, node: int) -> tuple[int, ...]:
        """Children of ``node`` (``ROOT`` for the first level), in index order."""
        return self._children.get(node, ())

    def path_to(self, node: int) -> list[int]:
        """Node indices from the first level down to ``node`` inclusive."""
        path: list[int] = []
        while node != ROOT:
            path.append(node)
            node = self.parents[node]
        return path[::-1]

    def ancestor_mask(self) -> np.ndarray:
        """Bool ``[num_nodes, num_nodes]``: ``mask[i, j]`` is True when j is i or an ancestor of i."""
        n = len(self.tokens)
        mask = np.zeros((n, n), dtype=bool)
        for i, parent in enumerate(self.parents):
            mask[i, i] = True
            if parent != ROOT:
                mask[i] |= mask[parent]
        return mask

    @cached_property
    def leaves(self) -> tuple[int, ...]:
        """Nodes without children, in index order (one per root-to-leaf branch)."""
        has_child = set(self.parents)
        return tuple(i for i in range(len(self.tokens)) if i not in has_child)

    def deterministic(self) -> "Draft":
        """The same tree without draft distributions (repeated siblings merged into the first):
        what a verifier that only compares tokens (sample-and-compare) sees."""
        if self.probs is None:
            return self
        tokens: list[int] = []
        parents: list[int] = []
        merged = self.merged_nodes
        for i, node in enumerate(merged):
            if node == len(tokens):  # the first of its token under its parent
                parent = self.parents[i]
                tokens.append(self.tokens[i])
                parents.append(ROOT if parent == ROOT else merged[parent])
        return Draft(tuple(tokens), tuple(parents))

    @cached_property
    def merged_nodes(self) -> tuple[int, ...]:
        """Each node's index in ``deterministic()`` (a repeated sibling's is its first twin's)."""
        kept: list[int] = []  # node -> its node in the merged tree
        merged: dict[tuple[int, int], int] = {}  # (merged parent, token) -> merged node
        for token, parent in zip(self.tokens, self.parents):
            key = (ROOT if parent == ROOT else kept[parent], token)
            kept.append(merged.setdefault(key, len(merged)))
        return tuple(kept)

    def pruned(self, max_leaves: int) -> "Draft":
        """The longest prefix of the node list with at most ``max_leaves`` leaves (a backend that
        verifies each branch as a sequence of its own may have a limit)."""
        if len(self.leaves) <= max_leaves:
            return self
        leaves = 0
        has_child: set[int] = set()
        for i, parent in enumerate(self.parents):
            # adding node i makes one new leaf, unless it is the first child of a leaf
            if not (parent != ROOT and parent not in has_child):
                if leaves + 1 > max_leaves:
                    return self.truncated(i)
                leaves += 1
            has_child.add(parent)
        return self

    def truncated(self, max_nodes: int) -> "Draft":
        """The first ``max_nodes`` nodes (a valid tree, because nodes are topologically ordered)."""
        if len(self) <= max_nodes:
            return self
        probs = None if self.probs is None else self.probs[:max_nodes]
        return Draft(self.tokens[:max_nodes], self.parents[:max_nodes], probs)

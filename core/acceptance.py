"""Acceptance rules: pure functions from (draft, target output) to what is kept.

Convention, used everywhere in specdraft:

- ``p`` is the **target's** distribution, ``q`` the **draft's**. ``target_logits`` /
  ``target_probs`` have one row per *position*: row 0 is the target's prediction for the token
  after the context (the ROOT's children); row ``1 + i`` is its prediction after draft node ``i``.
  Shape ``[1 + num_nodes, vocab_size]``.
- **accepted tokens**: the draft nodes on the kept path (``Acceptance.path``), root to leaf.
- **bonus token** (``Acceptance.next_token``): the target's own token after the kept path: the
  target's choice where the draft was rejected (the *recovered* token), or one more token after a
  fully accepted branch. Every verify step therefore yields ``len(path) + 1`` tokens.

Greedy: keep the longest path whose every token is the target's argmax.
Sampling: Leviathan/Chen speculative sampling for nodes with a draft distribution, generalised to
several candidates per node by SpecInfer's multi-candidate rejection sampling (accept candidate
``x ~ q`` with probability ``min(1, p'(x) / q(x))``, else ``p' <- norm(max(0, p' - q))``);
deterministic drafts use sample-and-compare (draw from ``p``, follow the child holding that token).
Both leave the output distribution exactly ``p``.

Sample-and-compare and greedy are one walk, ``follow_choices``: given the target's **own choice**
at each row (its argmax, or its draw keyed by position, see ``TokenChooser``), follow the child
holding that token. A backend that returns only those choices (a remote or engine target) serves
both; under a constraint the choices are taken from masked logits, in the same walk
(``specdraft.constrained.selection``). Rejection sampling needs the target's probabilities, so it runs
where logits are at hand. Only ``speculative_accept`` needs torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from .draft import ROOT, Draft
from .sampling import ACCEPT_STREAM, TARGET_STREAM, PositionalRandom, sample

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class Acceptance:
    path: tuple[int, ...]  # accepted draft node indices, root to leaf
    next_token: int  # the bonus token, chosen by the target

    @property
    def accepted_len(self) -> int:
        return len(self.path)


def follow_choices(draft: Draft, choice: Callable[[int], int], keep: Callable[[int], None] | None = None) -> Acceptance:
    """Longest draft path whose every token is the target's own choice, plus its next choice.

    ``choice(row)`` is the target's token at row ``row`` (0: after the context, ``1 + i``: after
    node ``i``); it is asked only for the rows on the walked path. Where siblings repeat a token
    the first is followed. ``keep(token)``, if given, is told each token the walk follows, before the
    next row's choice is asked (a constraint's grammar advances over it: ``specdraft.constrained``).
    """
    path: list[int] = []
    node = ROOT
    while True:
        wanted = choice(node + 1)
        child = next((c for c in draft.children(node) if draft.tokens[c] == wanted), None)
        if child is None:
            return Acceptance(tuple(path), wanted)
        if keep is not None:
            keep(wanted)
        path.append(child)
        node = child


def greedy_accept(draft: Draft, target_logits: "torch.Tensor") -> Acceptance:
    """Longest draft path matching the target's argmax at every step, plus the target's next token.

    ``target_logits``: ``[1 + len(draft), vocab]``. For a chain this is the ``cumprod`` of matches.
    """
    choices = target_logits.argmax(-1).tolist()  # [1 + num_nodes]
    return follow_choices(draft, choices.__getitem__)


def _residual(p: "torch.Tensor", q: "torch.Tensor") -> "torch.Tensor":
    """``norm(max(0, p - q))``; falls back to ``p`` when the difference has no mass (p == q)."""
    diff = (p - q).clamp_min(0.0)
    total = diff.sum()
    return diff / total if total > 0 else p


def speculative_accept(draft: Draft, target_probs: "torch.Tensor", rng: PositionalRandom, position: int) -> Acceptance:
    """Lossless speculative sampling over a draft tree.

    ``target_probs``: ``[1 + len(draft), vocab]``, already warped (temperature/top-k/top-p).
    ``position``: the absolute sequence position of the first token after the context; the draws
    for the token at position ``position + d`` come from ``rng`` at that position.
    At each node, deterministic children are checked by sample-and-compare; children carrying a
    draft distribution by multi-candidate rejection sampling. When no child is kept, the bonus
    token is drawn from what is left of ``p`` (the residual), and the walk ends.
    """
    import torch

    path: list[int] = []
    node = ROOT
    while True:
        p = target_probs[node + 1]
        here = position + len(path)
        draw = rng.generator(here, TARGET_STREAM)
        children = draft.children(node)
        if not children:
            return Acceptance(tuple(path), sample(p, draw))
        if draft.probs is None:
            token = sample(p, draw)
            child = next((c for c in children if draft.tokens[c] == token), None)
            if child is None:
                return Acceptance(tuple(path), token)
        else:
            uniforms = rng.generator(here, ACCEPT_STREAM)
            child = None
            for candidate in children:
                q = torch.as_tensor(draft.probs[candidate]).to(p)
                x = draft.tokens[candidate]
                ratio = float(p[x]) / max(float(q[x]), torch.finfo(torch.float32).tiny)
                if float(torch.rand((), generator=uniforms)) < ratio:
                    child = candidate
                    break
                p = _residual(p, q)
            if child is None:
                return Acceptance(tuple(path), sample(p, draw))
        path.append(child)
        node = child

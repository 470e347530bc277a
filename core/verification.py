"""Verification: what a target says about one draft, in one forward pass.

Rows follow the acceptance convention (``specdraft.acceptance``): row 0 is the target's prediction
for the token after the context, row ``1 + i`` its prediction after draft node ``i``. Each row has
the target's **own choice** (``choice(row)``: the argmax, or a keyed draw, see ``TokenChooser``),
and, from a backend that computes them, the raw ``logits`` ``[1 + num_nodes, vocab]``.

- ``Verification.from_logits``: a local backend. Choices are computed from the logits when first
  asked for, only for the rows the acceptance walk visits.
- ``Verification.from_choices``: a backend that returns only its chosen token per row (a remote
  verify server, a serving engine). Greedy decoding and sample-and-compare need nothing more.
- ``Verification.from_ranked``: a backend that returns each row's likeliest tokens in rank order (a
  serving engine's top-k log-probabilities) and can be asked, for one row, its own choice among given
  tokens (``resolve``). That is what constrained decoding needs without logits: the choice under a
  grammar's mask is the first allowed token in rank order, or, where none of them is allowed, the
  backend's own choice among the allowed ones (``specdraft.constrained.selection``).
- ``Verification.accepted``: a target that applied the acceptance rule itself (a verify server
  accepting draft distributions by rejection sampling, on its side of the wire). The generator keeps
  that ``acceptance`` as it is.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from .acceptance import Acceptance
from .draft import Draft
from .sampling import TokenChooser


class Verification:
    def __init__(
        self,
        choices: Sequence[int | None],
        logits: Any = None,
        chooser: TokenChooser | None = None,
        positions: Sequence[int] = (),
        acceptance: Acceptance | None = None,
        ranked: Sequence[Sequence[int]] | None = None,
        resolve: Callable[[int, Sequence[int]], int] | None = None,
    ) -> None:
        self._choices = list(choices)
        self.logits = logits  # [1 + num_nodes, vocab] or None
        self._chooser = chooser
        self._positions = list(positions)
        self.acceptance = acceptance  # set by a target that accepted itself (``accepted``)
        self.ranked = None if ranked is None else [list(row) for row in ranked]  # ``from_ranked``
        self._resolve = resolve

    @classmethod
    def accepted(cls, acceptance: Acceptance) -> "Verification":
        """The target's own ``acceptance`` of the draft (module docstring)."""
        return cls([], acceptance=acceptance)

    @classmethod
    def from_choices(cls, choices: Sequence[int]) -> "Verification":
        """The target's own token per row, as a choice-only backend returns them."""
        return cls([int(c) for c in choices])

    @classmethod
    def from_ranked(
        cls, ranked: Sequence[Sequence[int]], resolve: Callable[[int, Sequence[int]], int]
    ) -> "Verification":
        """Each row's likeliest tokens in rank order (the target's own choice first; an empty row: one
        the acceptance walk cannot reach), and ``resolve(row, allowed)``: the target's own choice at
        ``row`` among the token ids ``allowed`` (greedy: the likeliest of them)."""
        return cls([row[0] if row else -1 for row in ranked], ranked=ranked, resolve=resolve)

    def resolve(self, row: int, allowed: Sequence[int]) -> int:
        """The target's own choice at ``row`` among ``allowed`` (``from_ranked`` only)."""
        if self._resolve is None:
            raise RuntimeError("this verification cannot choose among given tokens (not from_ranked)")
        return self._resolve(row, allowed)

    @classmethod
    def from_logits(cls, logits: Any, draft: Draft, position: int, chooser: TokenChooser) -> "Verification":
        """``logits`` ``[1 + len(draft), vocab]`` of a pass that started predicting absolute
        ``position``; row ``r``'s token sits at ``position + depth`` (depth 0 for row 0)."""
        positions = [position] + [position + depth for depth in draft.depths]
        if chooser.params.greedy:  # one vectorised argmax over every row
            return cls([int(t) for t in logits.argmax(-1).tolist()], logits)
        return cls([None] * len(positions), logits, chooser, positions)

    def __len__(self) -> int:
        return len(self._choices)

    def choice(self, row: int) -> int:
        """The target's own token at ``row``."""
        token = self._choices[row]
        if token is None:
            assert self._chooser is not None
            token = self._choices[row] = self._chooser.choose(self.logits[row], self._positions[row])
        return token

"""The target's own log-probabilities of the tokens it emits, read from its verification logits.

Opt-in (``GenerationConfig.logprobs``): for every emitted token, ``TokenLogprob`` holds
``log_softmax`` of the target's **raw** logits at that position (before temperature, top-k and
top-p: the model's own distribution, whatever the decoding settings), and the ``k`` most likely
tokens there with theirs. Computed in float64 from the rows the verification already holds, so
collecting them costs no extra forward pass and changes nothing that is chosen: the tokens are the
same with and without logprobs.

Row convention (``specdraft.acceptance``): a step that keeps draft nodes ``path`` and then the bonus
token emits ``len(path) + 1`` tokens; the token at ``path[0]`` was predicted by row 0, the one at
``path[j]`` by row ``1 + path[j - 1]``, and the bonus token by row ``1 + path[-1]`` (row 0 when
nothing was kept). A target without logits (``Target.returns_logits`` False: a choice-only remote or
engine target) cannot give them: ``LogprobsUnavailableError``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence


class LogprobsUnavailableError(ValueError):
    """Log-probabilities were asked of a target whose verification returns no logits."""


@dataclass(frozen=True)
class TokenLogprob:
    """One emitted token: its id, its log-probability under the target's raw logits, and the ``k``
    most likely tokens at its position as ``(token id, logprob)``, most likely first (``k`` from
    ``GenerationConfig.logprobs``; the emitted token appears there only if it is among them)."""

    token: int
    logprob: float
    top: tuple[tuple[int, float], ...] = ()


def predicting_rows(path: Sequence[int]) -> list[int]:
    """The verification row that predicted each token a step emits: ``len(path) + 1`` rows, the
    kept draft nodes' tokens first, then the bonus token's (module docstring)."""
    return [0] + [1 + node for node in path]


def token_logprobs(logits: Any, rows: Sequence[int], tokens: Sequence[int], k: int) -> list[TokenLogprob]:
    """``TokenLogprob`` of ``tokens[i]`` under row ``rows[i]`` of ``logits`` ``[num_rows, vocab]``
    (a torch tensor on any device, or a numpy array), with the ``k`` likeliest alternatives (``k``
    >= 0; at most the vocabulary)."""
    import torch

    table = torch.as_tensor(logits)
    index = torch.as_tensor(list(rows), dtype=torch.long, device=table.device)
    scores = torch.log_softmax(table.index_select(0, index).double(), dim=-1)  # [len(rows), vocab]
    wanted = torch.as_tensor(list(tokens), dtype=torch.long, device=table.device)
    chosen = scores.gather(1, wanted[:, None])[:, 0].tolist()
    k = min(k, scores.shape[-1])
    if k == 0:
        return [TokenLogprob(int(t), float(lp)) for t, lp in zip(tokens, chosen)]
    values, ids = scores.topk(k, dim=-1)
    tops = [tuple(zip(row_ids, row_values)) for row_ids, row_values in zip(ids.tolist(), values.tolist())]
    return [TokenLogprob(int(t), float(lp), top) for t, lp, top in zip(tokens, chosen, tops)]

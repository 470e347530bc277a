"""Is a pass over k tokens computed exactly as k one-token passes? Checked on the logits themselves.

Speculative decoding on llama.cpp is lossless only if a verification pass over a draft of k tokens
gives, for every row, bit for bit the logits that k one-token passes give: otherwise a near-tie can
flip and the output differs from plain decoding. Whether it does depends on the build (the patched
kernels of ``scripts/patches``), the CPU's instruction set, and the settings (no tiled kernel, no
flash attention; repacked weights are fine on the patched build). So the backend does not assume
it: ``probe`` runs a short sequence both ways on the loaded model and compares with
``np.array_equal``, and ``LlamaCppModel.exact`` reports the answer (``Stats.exact`` in every result).

``compare`` is the same check at any context length and pass widths; the tests run it over widths
1-48 at contexts crossing 256/512/768 KV cells on every embedded GGUF (``tests/core/backends/llama_cpp``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ...cost import PassCostProfile
from .library import LlamaContext
from .runtime import LlamaRuntime

MAIN = 0
# The probe: after a 4-token prefix, passes of 2, 5, 8, 20 and 36 tokens against one-token passes:
# each on another side of the kernel switches seen on x86 (tinyBLAS from 2 rows; the repacked gemm
# takes rows 4 at a time and its gemv the rest, so 5 is gemm + gemv; stock's tiled kernel from 8;
# multi-column groups of 16, so 20 is 16 + 4; the patched build's tiled kernel from 32, tiles of 16,
# so 36 is 32 + 4). The one-token passes run once, for the widest. Then passes of PROBE_COST_WIDTHS
# are only timed, so that the cost profile holds the whole curve from 1 to 32 tokens before the first
# request.
PROBE_PREFIX, PROBE_WIDTHS = 4, (2, 5, 8, 20, 36)
PROBE_COST_WIDTHS = (4, 16, 32)


@dataclass(frozen=True)
class Comparison:
    """One wide pass against one-token passes. ``rows_differing``: rows whose logits are not all
    bit-identical; ``max_abs_diff``: the largest difference of one logit (0.0 when exact)."""

    context: int
    width: int
    rows_differing: int
    max_abs_diff: float

    @property
    def exact(self) -> bool:
        return self.rows_differing == 0


def _decode_chain(context: LlamaContext, tokens: Sequence[int], start: int, every_row: bool = True) -> np.ndarray:
    """``tokens`` fed as one pass at positions ``start...``: every row's logits ``[len, vocab]``, or with
    ``every_row=False`` the last row's alone ``[1, vocab]`` (llama.cpp then runs the output head on that
    row only, which leaves every row's keys and values as they are)."""
    n = len(tokens)
    return context.decode(list(tokens), list(range(start, start + n)), [(MAIN,)] * n, [every_row] * (n - 1) + [True])


def _decode_range(context: LlamaContext, tokens: Sequence[int], start: int, stop: int) -> None:
    """Feed ``tokens[start:stop]`` at positions ``start...``, in batches the context takes; only the KV
    cache is wanted, so each batch asks for its last row's logits alone."""
    for first in range(start, stop, context.n_batch):
        _decode_chain(context, tokens[first : min(stop, first + context.n_batch)], first, every_row=False)


def _timed(context: LlamaContext, tokens: Sequence[int], start: int, cost: PassCostProfile | None) -> np.ndarray:
    began = time.perf_counter()
    rows = _decode_chain(context, tokens, start)
    if cost is not None:
        cost.record(len(tokens), time.perf_counter() - began)
    return rows


def compare(
    model: LlamaRuntime,
    tokens: Sequence[int],
    prefix: int | Sequence[int],
    widths: Sequence[int],
    cost: PassCostProfile | None = None,
) -> list[Comparison]:
    """Feed ``tokens[:prefix]``; then, for each width w, the next w tokens as ONE pass, against the
    same tokens as w one-token passes; compare the logits of every row. One context of ``model``,
    rolled back to the prefix between passes (as a target rolls back a rejected draft). With
    ``cost``, every pass after the prefix is also timed into it.

    ``prefix`` may be several lengths: they are checked in ascending order in the same context, each
    prefix fed on top of the last one's (so a check at contexts 100..760 feeds 760 tokens once, not
    the sum); the comparisons come in that order, widths ascending within each."""
    prefixes = sorted({prefix} if isinstance(prefix, int) else set(prefix))
    widths = sorted(set(widths))
    if not widths or widths[0] < 1 or not prefixes or prefixes[0] < 1 or prefixes[-1] + widths[-1] > len(tokens):
        raise ValueError(f"need widths >= 1, prefixes >= 1 and prefix + widths <= {len(tokens)} tokens")
    context = model.acquire_context()
    comparisons = []
    try:
        with model.lock:
            fed = 0
            for length in prefixes:
                context.seq_rm(MAIN, fed, -1)
                _decode_range(context, tokens, fed, length)
                fed = length
                comparisons += _compare_at(context, tokens, length, widths, cost)
    finally:
        model.release_context(context)
    return comparisons


def _compare_at(
    context: LlamaContext, tokens: Sequence[int], prefix: int, widths: list[int], cost: PassCostProfile | None
) -> list[Comparison]:
    """``compare`` at one prefix, already fed: the context holds ``tokens[:prefix]`` and more after it
    is rolled back."""
    rest = list(tokens[prefix : prefix + widths[-1]])
    narrow = np.concatenate(
        [_timed(context, [token], prefix + i, cost) for i, token in enumerate(rest)]
    )  # [max width, vocab]
    comparisons = []
    for width in widths:
        context.seq_rm(MAIN, prefix, -1)
        wide = _timed(context, rest[:width], prefix, cost)  # [width, vocab]
        same = np.all(wide == narrow[:width], axis=1)
        comparisons.append(Comparison(prefix, width, int((~same).sum()), float(np.abs(wide - narrow[:width]).max())))
    return comparisons


def varied_ids(model: LlamaRuntime, n: int) -> list[int]:
    """``n`` ordinary tokens of varied English text (words in a shuffled cycle, so no repetition is
    long enough to make the logits trivial): the long sequences the exactness tests and benchmark use."""
    words = (
        "the committee met on Tuesday to discuss a budget that was approved after long debate "
        "while rain fell over the harbour and ships waited for the tide to turn before sailing north"
    ).split()
    text = " ".join(words[(i * 7 + i // len(words)) % len(words)] for i in range(2 * n))  # >= 1 token a word
    return model.tokenizer.encode(text)[:n]


def probe_tokens(model: LlamaRuntime) -> list[int]:
    """A fixed, ordinary sequence of ``PROBE_PREFIX + max(PROBE_WIDTHS + PROBE_COST_WIDTHS)`` tokens of the
    model's vocabulary."""
    text = "The quick brown fox jumps over the lazy dog, and then it runs back home to sleep. " * 4
    ids = model.tokenizer.encode(text)
    return ids[: PROBE_PREFIX + max(PROBE_WIDTHS + PROBE_COST_WIDTHS)]


def time_widths(
    model: LlamaRuntime, tokens: Sequence[int], prefix: int, widths: Sequence[int], cost: PassCostProfile
) -> None:
    """Time one pass over each of ``widths`` tokens of ``tokens`` after ``tokens[:prefix]`` into ``cost``."""
    if prefix < 1 or prefix + max(widths) > len(tokens):
        raise ValueError(f"need prefix >= 1 and prefix + widths <= {len(tokens)} tokens")
    context = model.acquire_context()
    try:
        with model.lock:
            _decode_range(context, tokens, 0, prefix)
            for width in widths:
                _timed(context, tokens[prefix : prefix + width], prefix, cost)
                context.seq_rm(MAIN, prefix, -1)
    finally:
        model.release_context(context)


def probe(model: LlamaRuntime) -> Comparison:
    """The load-time check (``LlamaCppModel.exact``), well under a second on a small model: the
    worst of the probe's widths (the first that differs, else the widest). Its passes, and one pass
    of each of ``PROBE_COST_WIDTHS``, are timed into ``model.cost``, so a process's first request
    already drafts from the measured cost curve (1 to 32 tokens)."""
    tokens = probe_tokens(model)
    comparisons = compare(model, tokens, PROBE_PREFIX, PROBE_WIDTHS, model.cost)
    time_widths(model, tokens, PROBE_PREFIX, PROBE_COST_WIDTHS, model.cost)
    return next((c for c in comparisons if not c.exact), comparisons[-1])

"""What a completion reports about its tokens: OpenAI's ``usage`` (with a ``prediction``, its
``completion_tokens_details`` counted on the longest common subsequence of the prediction and each
choice) and ``spec_decode_metrics`` (the speculation in vLLM's names). docs/usage-fields.md says what
each field means and why.
"""

from __future__ import annotations

from typing import Any, Sequence

from specdraft import GenerationResult, Stats


def prediction_overlap(prediction: Sequence[int], completion: Sequence[int]) -> int:
    """The length of the longest common subsequence of two token sequences: how many of the
    prediction's tokens appear in the completion, in order.

    Bit-parallel (Hyyro 2004): one bit per prediction token in a Python integer, so the cost is
    ``len(completion)`` big-integer additions of ``len(prediction)`` bits (milliseconds for
    thousands of tokens each)."""
    where: dict[int, int] = {}  # token -> bit mask of its positions in the prediction
    for i, token in enumerate(prediction):
        where[token] = where.get(token, 0) | (1 << i)
    full = (1 << len(prediction)) - 1
    unmatched = full  # a zero bit per prediction token matched so far (on the best alignment)
    for token in completion:
        matches = unmatched & where.get(token, 0)
        unmatched = ((unmatched + matches) | (unmatched - matches)) & full
    return len(prediction) - unmatched.bit_count()


def cached_tokens(results: list[GenerationResult]) -> int:
    """OpenAI's ``usage.prompt_tokens_details.cached_tokens``: prompt tokens restored from the prefix
    cache (``Stats.cached_prompt_tokens``), each prompt counted once as ``prompt_tokens`` counts it
    (its first choice's; later choices of the same prompt find it cached)."""
    first: dict[tuple[int, ...], int] = {}
    for result in results:
        first.setdefault(tuple(result.prompt_token_ids), result.stats.cached_prompt_tokens)
    return sum(first.values())


def usage(prompt_tokens: int, results: list[GenerationResult], prediction_ids: Sequence[int] | None) -> dict[str, Any]:
    """OpenAI's ``usage`` of the choices in ``results`` (``prompt_tokens``: every prompt once, however
    many choices it has); ``completion_tokens_details`` only with a prediction."""
    completion = sum(len(result.token_ids) for result in results)
    answer: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion,
        "total_tokens": prompt_tokens + completion,
        "prompt_tokens_details": {"cached_tokens": cached_tokens(results)},
    }
    if prediction_ids is not None:
        accepted = sum(prediction_overlap(prediction_ids, result.token_ids) for result in results)
        answer["completion_tokens_details"] = {
            "accepted_prediction_tokens": accepted,
            "rejected_prediction_tokens": len(prediction_ids) * len(results) - accepted,
        }
    return answer


def spec_decode_metrics(stats: Stats) -> dict[str, Any]:
    """``stats`` in the names of vLLM's spec-decode metrics (see the module docstring)."""
    drafted, accepted = stats.position_lists()
    return {
        "num_drafts": stats.draft_steps,
        "num_draft_tokens": stats.drafted_tokens,
        "num_accepted_tokens": stats.accepted_tokens,
        "num_accepted_tokens_per_pos": accepted,
        "num_draft_tokens_per_pos": drafted,
    }

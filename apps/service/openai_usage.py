"""What a completion reports about its tokens: OpenAI's ``usage`` and vLLM-style speculation metrics.

``usage`` (``usage``): OpenAI's counts, summed over the answer's choices. With a ``prediction``
(OpenAI's predicted outputs) it carries ``completion_tokens_details`` as OpenAI defines it:

- ``accepted_prediction_tokens``: the tokens of the prediction that appeared in the completion;
- ``rejected_prediction_tokens``: the tokens of the prediction that did not.

"Appeared" is read as a token alignment, not as the drafter's luck: the most prediction tokens that
occur in the completion's tokens in the same order (the length of their longest common
subsequence, ``prediction_overlap``). So a prediction equal to the completion has 0 rejected, one
sharing no token with it has 0 accepted, and the two always sum to the prediction's length, per
choice (each choice is generated against the whole prediction). The verifier's own counts are not
used for this: the first token (chosen by the prefill) and every bonus token come from the target
even where they equal the prediction's, and tokens accepted past a stop sequence are not in the
completion; those counts are in ``spec_decode_metrics`` instead. ``completion_tokens`` stays the
number of tokens generated (OpenAI also bills rejected prediction tokens there; nothing is billed
here).

``spec_decode_metrics``: one request's speculation in the names of vLLM's spec-decode metrics
(``vllm:spec_decode_num_drafts`` and the rest), from the core's ``Stats``:

- ``num_drafts``: verify steps that sent a draft of at least one token;
- ``num_draft_tokens``: draft tokens sent to verification;
- ``num_accepted_tokens``: draft tokens the target accepted (bonus tokens not counted);
- ``num_accepted_tokens_per_pos``: for each draft position (0: the first token after the context),
  the drafts whose accepted path reached it; ``[i] / num_drafts`` is vLLM's acceptance rate at
  position ``i``;
- ``num_draft_tokens_per_pos`` (not one of vLLM's, which drafts a fixed number of tokens): the draft
  tokens sent at each position; drafts here vary in length and may be trees, so
  ``num_accepted_tokens_per_pos[i] / num_draft_tokens_per_pos[i]`` is the acceptance rate at a
  position among the drafts that reached it (for chains).
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

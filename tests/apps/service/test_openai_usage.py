"""``usage`` for predicted outputs and ``spec_decode_metrics``: the counting itself, then what the
official ``openai`` SDK reads from a live server on loopback (chat and text completions, streamed
and not, one and two choices), with exact numbers where they can be known: a prediction equal to
the answer rejects nothing, one sharing no token with it accepts nothing, an edited one accepts
its longest common subsequence with the answer."""

from __future__ import annotations

import random
from typing import Any

import pytest
from live_server import LiveServer
from openai import OpenAI
from test_service_api import MESSAGES, greedy
from tiny_service import SERVED, make_app, make_chat_model

from specdraft import GenerationResult, Stats
from specdraft.apps.service.openai_usage import prediction_overlap, spec_decode_metrics, usage

MAX_TOKENS = 10
PROMPT = "def add(a, b):"  # the tiny model's answer to it tokenizes back to itself (checked where used)
UNRELATED = "日本語 🙂"  # shares no token with the tiny model's answers here (checked where used)


def lcs_length(a: list[int], b: list[int]) -> int:
    """The textbook dynamic programme, as the reference for the bit-parallel count."""
    row = [0] * (len(b) + 1)
    for x in a:
        diagonal = 0
        for j, y in enumerate(b):
            above = row[j + 1]
            row[j + 1] = diagonal + 1 if x == y else max(above, row[j])
            diagonal = above
    return row[-1]


# --- the counting -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "prediction, completion, expected",
    [
        ([1, 2, 3], [1, 2, 3], 3),  # perfect
        ([1, 2, 3], [4, 5, 6, 7], 0),  # all wrong
        ([], [1, 2], 0),
        ([1, 2], [], 0),  # nothing generated: the whole prediction is rejected
        ([1, 2, 3, 4, 5], [1, 2, 9, 4, 5], 4),  # one token replaced
        ([1, 2, 3], [1, 9, 9, 2, 9, 3, 9], 3),  # insertions keep every prediction token
        ([1, 2, 3], [3, 2, 1], 1),  # in order only
        ([7, 7, 7], [7], 1),  # a completion token matches one prediction token
    ],
)
def test_prediction_overlap_on_known_cases(prediction, completion, expected):
    assert prediction_overlap(prediction, completion) == expected == lcs_length(prediction, completion)


def test_prediction_overlap_equals_the_dynamic_programme():
    rng = random.Random(20)
    for _ in range(300):
        vocabulary = rng.choice([2, 4, 30])
        prediction = [rng.randrange(vocabulary) for _ in range(rng.randrange(0, 70))]
        completion = [rng.randrange(vocabulary) for _ in range(rng.randrange(0, 70))]
        assert prediction_overlap(prediction, completion) == lcs_length(prediction, completion)


def result(token_ids: list[int]) -> GenerationResult:
    """A finished choice that generated ``token_ids`` (the rest does not matter to ``usage``)."""
    return GenerationResult(text="", token_ids=token_ids, prompt_token_ids=[1], finish_reason="length", stats=Stats())


def test_usage_counts_each_choice_against_the_whole_prediction():
    answer = usage(3, [result([5, 6, 7]), result([5, 9, 7, 8])], prediction_ids=[5, 6, 7])
    assert answer["completion_tokens"] == 7 and answer["total_tokens"] == 10
    assert answer["completion_tokens_details"] == {
        "accepted_prediction_tokens": 3 + 2,
        "rejected_prediction_tokens": 0 + 1,
    }


def test_usage_without_a_prediction_has_no_prediction_details():
    assert "completion_tokens_details" not in usage(3, [result([5, 6])], prediction_ids=None)


def test_spec_decode_metrics_are_the_stats_in_vllm_names():
    stats = Stats()
    for drafted, accepted in [(3, 3), (0, 0), (3, 1)]:
        stats.record_step(drafted, accepted)
    assert spec_decode_metrics(stats) == {
        "num_drafts": 2,
        "num_draft_tokens": 6,
        "num_accepted_tokens": 4,
        "num_accepted_tokens_per_pos": [2, 1, 1],
        "num_draft_tokens_per_pos": [2, 2, 2],
    }
    assert spec_decode_metrics(Stats())["num_accepted_tokens_per_pos"] == []


# --- the openai SDK against a live server -----------------------------------------------------------
@pytest.fixture(scope="module")
def model(tokenizer):
    return make_chat_model(tokenizer)


@pytest.fixture(scope="module")
def client(model):
    with LiveServer(make_app(model)) as live:
        yield OpenAI(base_url=live.url + "/v1", api_key="x", max_retries=0, timeout=120)


@pytest.fixture(scope="module")
def references(model) -> dict[str, GenerationResult]:
    """endpoint -> the target's own answer to its prompt."""
    return {
        "chat": greedy(model, model.encode_chat(MESSAGES), MAX_TOKENS),
        "text": greedy(model, model.encode(PROMPT), MAX_TOKENS),
    }


def ask(
    client: OpenAI, endpoint: str, prediction: str, n: int, stream: bool
) -> tuple[list[str], Any, list[tuple[dict, dict]]]:
    """(each choice's text, the answer's usage, the spec_decode_metrics and speculation pairs it
    carried: the answer's, or each streamed choice's), as the SDK gives them."""
    common = {"model": SERVED, "max_tokens": MAX_TOKENS, "n": n}
    if stream:
        common.update(stream=True, stream_options={"include_usage": True})
    if endpoint == "chat":
        answer = client.chat.completions.create(
            messages=MESSAGES, prediction={"type": "content", "content": prediction}, **common
        )
    else:
        answer = client.completions.create(
            prompt=PROMPT, extra_body={"prediction": {"type": "content", "content": prediction}}, **common
        )
    if not stream:
        texts = [c.message.content if endpoint == "chat" else c.text for c in answer.choices]
        return texts, answer.usage, [(answer.model_extra["spec_decode_metrics"], answer.model_extra["speculation"])]
    chunks = list(answer)
    *pieces, last = chunks
    assert last.choices == [] and last.usage is not None
    texts = [""] * n
    metrics = []
    for chunk in pieces:
        [choice] = chunk.choices
        texts[choice.index] += (choice.delta.content or "") if endpoint == "chat" else choice.text
        if choice.finish_reason is not None:
            metrics.append((chunk.model_extra["spec_decode_metrics"], chunk.model_extra["speculation"]))
    assert len(metrics) == n
    return texts, last.usage, metrics


def check_metrics(metrics: list[tuple[dict, dict]]) -> None:
    """spec_decode_metrics agree with the speculation object beside them."""
    for spec, speculation in metrics:
        assert spec["num_draft_tokens"] == speculation["drafted_tokens"]
        assert spec["num_accepted_tokens"] == speculation["accepted_tokens"]
        assert sum(spec["num_draft_tokens_per_pos"]) == spec["num_draft_tokens"]
        assert sum(spec["num_accepted_tokens_per_pos"]) == spec["num_accepted_tokens"]
        assert len(spec["num_accepted_tokens_per_pos"]) == len(spec["num_draft_tokens_per_pos"])
        assert spec["num_drafts"] <= speculation["verify_steps"]
        assert all(a <= spec["num_drafts"] for a in spec["num_accepted_tokens_per_pos"])


ENDPOINTS_AND_SHAPES = [(e, n, s) for e in ("chat", "text") for n in (1, 2) for s in (False, True)]


@pytest.mark.parametrize("endpoint, n, stream", ENDPOINTS_AND_SHAPES)
def test_a_prediction_equal_to_the_answer_rejects_nothing(client, model, references, endpoint, n, stream):
    reference = references[endpoint]
    prediction_ids = model.tokenizer.encode(reference.text)
    assert prediction_ids == reference.token_ids, "the answer should tokenize back to itself"
    texts, used, metrics = ask(client, endpoint, reference.text, n, stream)
    assert texts == [reference.text] * n
    assert used.completion_tokens == n * len(reference.token_ids)
    assert used.completion_tokens_details.accepted_prediction_tokens == n * len(prediction_ids)
    assert used.completion_tokens_details.rejected_prediction_tokens == 0
    check_metrics(metrics)
    assert all(spec["num_drafts"] > 0 and spec["num_accepted_tokens"] > 0 for spec, _ in metrics)


@pytest.mark.parametrize("endpoint, n, stream", ENDPOINTS_AND_SHAPES)
def test_a_prediction_sharing_no_token_accepts_nothing(client, model, references, endpoint, n, stream):
    reference = references[endpoint]
    prediction_ids = model.tokenizer.encode(UNRELATED)
    assert not set(prediction_ids) & set(reference.token_ids), "the prediction should share no token with the answer"
    texts, used, metrics = ask(client, endpoint, UNRELATED, n, stream)
    assert texts == [reference.text] * n
    assert used.completion_tokens_details.accepted_prediction_tokens == 0
    assert used.completion_tokens_details.rejected_prediction_tokens == n * len(prediction_ids)
    check_metrics(metrics)
    assert all(spec["num_accepted_tokens"] == 0 for spec, _ in metrics)


@pytest.mark.parametrize("endpoint, n, stream", ENDPOINTS_AND_SHAPES)
def test_an_edited_prediction_accepts_what_the_answer_kept(client, model, references, endpoint, n, stream):
    reference = references[endpoint]
    prediction = reference.text[: len(reference.text) // 2] + " something else entirely"
    prediction_ids = model.tokenizer.encode(prediction)
    kept = lcs_length(prediction_ids, reference.token_ids)
    assert 0 < kept < len(prediction_ids), "the test should see a partly right prediction"
    texts, used, metrics = ask(client, endpoint, prediction, n, stream)
    assert texts == [reference.text] * n
    assert used.completion_tokens_details.accepted_prediction_tokens == n * kept
    assert used.completion_tokens_details.rejected_prediction_tokens == n * (len(prediction_ids) - kept)
    check_metrics(metrics)


def test_streamed_usage_on_the_last_choice_without_include_usage(client, model, references):
    reference = references["chat"]
    chunks = list(
        client.chat.completions.create(
            model=SERVED,
            messages=MESSAGES,
            max_tokens=MAX_TOKENS,
            n=2,
            stream=True,
            prediction={"type": "content", "content": reference.text},
        )
    )
    finals = [chunk for chunk in chunks if chunk.choices[0].finish_reason is not None]
    assert [chunk.choices[0].index for chunk in finals] == [0, 1]
    assert finals[0].usage is None
    details = finals[1].usage.completion_tokens_details
    assert (details.accepted_prediction_tokens, details.rejected_prediction_tokens) == (2 * len(reference.token_ids), 0)


def test_every_answer_carries_spec_decode_metrics(client, references):
    """Without a prediction and without a drafter nothing is drafted: zero counts, empty lists."""
    answer = client.chat.completions.create(
        model=SERVED, messages=MESSAGES, max_tokens=MAX_TOKENS, extra_body={"drafter": "none"}
    )
    assert answer.usage.completion_tokens_details is None
    assert answer.model_extra["spec_decode_metrics"] == {
        "num_drafts": 0,
        "num_draft_tokens": 0,
        "num_accepted_tokens": 0,
        "num_accepted_tokens_per_pos": [],
        "num_draft_tokens_per_pos": [],
    }
    drafted = client.completions.create(model=SERVED, prompt=PROMPT, max_tokens=MAX_TOKENS)  # the default drafter
    check_metrics([(drafted.model_extra["spec_decode_metrics"], drafted.model_extra["speculation"])])

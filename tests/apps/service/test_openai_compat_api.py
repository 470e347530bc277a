"""The completions endpoints' OpenAI fields over HTTP (Flask's test client): several prompts, ``n``,
logprobs (the target's own), ``stream_options``, and what the server cannot do answered with a 400."""

import json

import pytest
from test_service_api import MESSAGES, PROMPT, greedy, post_ok, sse_payloads
from tiny_service import SERVED, make_app, make_chat_model

from specdraft import TokenChooser, Verification

MAX_TOKENS = 10
OTHER = "The dog sleeps."


@pytest.fixture(scope="module")
def model(tokenizer):
    return make_chat_model(tokenizer)


@pytest.fixture(scope="module")
def client(model):
    return make_app(model).test_client()


def chunks(response):
    payloads = sse_payloads(response)
    assert payloads[-1] == "[DONE]"
    return [json.loads(p) for p in payloads[:-1]]


def test_several_prompts_times_n_in_openai_order(client, model):
    body = {"prompt": [PROMPT, OTHER], "n": 2, "max_tokens": MAX_TOKENS, "temperature": 1.0, "seed": 3}
    answer = post_ok(client, "/v1/completions", body)
    expected = [
        greedy(model, model.encode(p), MAX_TOKENS, temperature=1.0, seed=3 + j)
        for p in (PROMPT, OTHER)
        for j in range(2)
    ]
    assert [(c["index"], c["text"]) for c in answer["choices"]] == [(i, r.text) for i, r in enumerate(expected)]
    prompt_tokens = len(model.encode(PROMPT)) + len(model.encode(OTHER))  # each prompt once
    completion = sum(len(r.token_ids) for r in expected)
    assert answer["usage"] == {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion,
        "total_tokens": prompt_tokens + completion,
        "prompt_tokens_details": {"cached_tokens": 0},
    }  # prompts too short for the prefix cache
    assert answer["speculation"]["generated_tokens"] == completion


def test_streamed_choices_come_in_turn_with_usage_last(client, model):
    body = {"messages": MESSAGES, "n": 2, "max_tokens": MAX_TOKENS, "temperature": 1.0, "seed": 9, "stream": True}
    events = chunks(client.post("/v1/chat/completions", json=body))
    prompt_ids = model.encode_chat(MESSAGES)
    for j in range(2):
        mine = [e for e in events if e["choices"][0]["index"] == j]
        reference = greedy(model, prompt_ids, MAX_TOKENS, temperature=1.0, seed=9 + j)
        assert "".join(e["choices"][0]["delta"].get("content", "") for e in mine) == reference.text
        assert mine[0]["choices"][0]["delta"]["role"] == "assistant"
        assert [e["choices"][0]["finish_reason"] for e in mine][-1] == reference.finish_reason
        assert mine[-1]["speculation"]["generated_tokens"] == len(reference.token_ids)
    indexes = [e["choices"][0]["index"] for e in events]
    assert indexes == sorted(indexes)  # choice 0 ends before choice 1 starts
    assert "usage" not in events[len([i for i in indexes if i == 0]) - 1]  # on the last choice's final chunk only
    assert events[-1]["usage"]["completion_tokens"] == sum(
        len(greedy(model, prompt_ids, MAX_TOKENS, temperature=1.0, seed=9 + j).token_ids) for j in range(2)
    )


def test_include_usage_adds_openais_usage_chunk(client, model):
    body = {"prompt": PROMPT, "max_tokens": MAX_TOKENS, "stream": True, "stream_options": {"include_usage": True}}
    *pieces, last = chunks(client.post("/v1/completions", json=body))
    reference = greedy(model, model.encode(PROMPT), MAX_TOKENS)
    assert last["choices"] == [] and last["object"] == "text_completion"
    assert last["usage"]["completion_tokens"] == len(reference.token_ids)
    assert all("usage" not in piece for piece in pieces)
    assert pieces[-1]["choices"][0]["finish_reason"] == reference.finish_reason


@pytest.mark.parametrize("drafter", ["none", "prompt-lookup"])
def test_logprobs_change_no_token_and_match_the_targets_own(client, model, drafter):
    body = {"messages": MESSAGES, "max_tokens": MAX_TOKENS, "drafter": drafter}
    plain = post_ok(client, "/v1/chat/completions", body)
    answer = post_ok(client, "/v1/chat/completions", {**body, "logprobs": True, "top_logprobs": 3})
    assert answer["choices"][0]["message"] == plain["choices"][0]["message"]
    assert plain["choices"][0]["logprobs"] is None  # required by OpenAI's schema, null when not asked for
    reference = greedy(model, model.encode_chat(MESSAGES), MAX_TOKENS, logprobs=3)
    content = answer["choices"][0]["logprobs"]["content"]
    assert [e["token"] for e in content] == [model.tokenizer.decode([t]) for t in reference.token_ids]
    assert [e["logprob"] for e in content] == pytest.approx([e.logprob for e in reference.logprobs])
    for entry, expected in zip(content, reference.logprobs):
        assert [t["token"] for t in entry["top_logprobs"]] == [model.tokenizer.decode([t]) for t, _ in expected.top]
        assert entry["bytes"] == list(entry["token"].encode("utf-8"))
        assert entry["top_logprobs"][0]["logprob"] >= entry["logprob"]  # greedy: the token is the likeliest


def test_streamed_logprobs_add_up_to_the_whole_answers(client):
    body = {"prompt": PROMPT, "max_tokens": MAX_TOKENS, "logprobs": 2}
    whole = post_ok(client, "/v1/completions", body)["choices"][0]["logprobs"]
    events = chunks(client.post("/v1/completions", json={**body, "stream": True}))
    joined = {key: [v for e in events for v in e["choices"][0]["logprobs"][key]] for key in whole}
    assert joined == whole
    assert whole["text_offset"][0] == 0 and len(whole["tokens"]) == MAX_TOKENS


def test_a_backend_without_logits_refuses_logprobs(tokenizer):
    class ChoicesOnlyModel:  # targets that return only their chosen tokens, as a remote verify server
        def __init__(self, inner):
            self.inner = inner

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def new_target(self, chooser=TokenChooser()):
            target = self.inner.new_target(chooser)
            target.returns_logits = False
            verify = target.verify
            target.verify = lambda draft: Verification.from_choices(
                [verify(draft).choice(r) for r in range(1 + len(draft))]
            )
            return target

    client = make_app(ChoicesOnlyModel(make_chat_model(tokenizer))).test_client()
    post_ok(client, "/v1/completions", {"prompt": PROMPT, "max_tokens": 3})
    for stream in (False, True):
        response = client.post(
            "/v1/completions", json={"prompt": PROMPT, "max_tokens": 3, "logprobs": 1, "stream": stream}
        )
        assert response.status_code == 400
        assert response.get_json()["error"] == {
            "message": "logprobs are not available on this backend (its verification returns no logits)",
            "type": "invalid_request_error",
            "param": "logprobs",
        }


@pytest.mark.parametrize(
    ("body", "param", "words"),
    [
        ({"prompt": [1, 2, 400]}, "prompt", "token id 400, outside the model's vocabulary of 400 tokens"),
        ({"prompt": ["hi", "The quick brown fox. " * 120]}, "prompt", "more than the model's context"),
        ({"prompt": "hi", "model": "gpt-3.5-turbo"}, "model", "this server serves 'tiny'"),
        ({"prompt": "hi", "echo": True}, "echo", "echo is not supported"),
    ],
)
def test_what_cannot_be_answered_is_a_400(client, body, param, words):
    response = client.post("/v1/completions", json={"max_tokens": 4, **body})
    assert response.status_code == 400
    error = response.get_json()["error"]
    assert error["param"] == param and words in error["message"]


def test_serve_any_model_name(model):
    client = make_app(model, serve_any_model_name=True).test_client()
    answer = post_ok(
        client, "/v1/completions", {"prompt": PROMPT, "max_tokens": MAX_TOKENS, "model": "gpt-3.5-turbo-instruct"}
    )
    assert answer["model"] == SERVED
    assert answer["choices"][0]["text"] == greedy(model, model.encode(PROMPT), MAX_TOKENS).text

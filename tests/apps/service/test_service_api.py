"""The HTTP service end to end, on a tiny random-initialised model served under the name "tiny".

Answers must be the target's own: greedy text equals ``SpeculativeGenerator.generate`` without a
drafter, whatever the request's drafter, streamed or not, alone or concurrently.

The apps are built by ``tiny_service`` (shared with the grammar API's tests).
"""

import json
import threading

import pytest
from tiny_service import DRAFT, SERVED, make_app, make_chat_model

from specdraft import GenerationConfig, SpeculativeGenerator
from specdraft.apps.model_pool import ModelPool
from specdraft.apps.service import ServiceConfig, create_app

# The tiny model repeats itself after this prompt, so prompt lookup drafts tokens that the target
# accepts, within the first speculative steps (before the policy's timing-based fall-back can act).
PROMPT = "Grammar correction returns"
MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What does the fox do?"}]
MAX_TOKENS = 12


@pytest.fixture(scope="module")
def model(tokenizer):
    """The served model: the shared tiny architecture with a chat template on its tokenizer."""
    return make_chat_model(tokenizer)


@pytest.fixture(scope="module")
def app(model, tiny_draft_model):
    return make_app(model, tiny_draft_model)


@pytest.fixture
def client(app):
    return app.test_client()


def greedy(model, prompt_ids, max_tokens=MAX_TOKENS, **config):
    """The target's own output: plain decoding, no drafter."""
    return SpeculativeGenerator(model).generate(prompt_ids, None, GenerationConfig(max_new_tokens=max_tokens, **config))


@pytest.fixture(scope="module")
def completion_reference(model):
    return greedy(model, model.encode(PROMPT))


@pytest.fixture(scope="module")
def chat_reference(model):
    return greedy(model, model.encode_chat(MESSAGES))


def post_ok(client, path, body):
    response = client.post(path, json=body)
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()


def sse_payloads(response):
    """The ``data:`` payloads of a server-sent event stream, in order."""
    assert response.status_code == 200
    assert response.mimetype == "text/event-stream"
    body = response.get_data(as_text=True)
    assert body.endswith("\n\n")
    events = body.split("\n\n")[:-1]
    assert all(event.startswith("data: ") for event in events), events
    return [event[len("data: ") :] for event in events]


# --- health ---------------------------------------------------------------------------------------
def test_healthz_reports_the_model_and_loads_it_only_when_a_request_needs_it(model):
    client = make_app(model).test_client()
    assert client.get("/healthz").get_json() == {"status": "ok", "model": SERVED, "loaded": False}
    post_ok(client, "/v1/completions", {"prompt": "hi", "max_tokens": 1})
    assert client.get("/healthz").get_json() == {"status": "ok", "model": SERVED, "loaded": True}


def test_models_lists_the_served_model(client):
    body = client.get("/v1/models").get_json()
    assert body["object"] == "list"
    assert [(m["id"], m["object"]) for m in body["data"]] == [(SERVED, "model")]
    assert isinstance(body["data"][0]["created"], int)


# --- completions ----------------------------------------------------------------------------------
def test_completion_is_the_targets_greedy_output(client, completion_reference):
    body = post_ok(client, "/v1/completions", {"model": SERVED, "prompt": PROMPT, "max_tokens": MAX_TOKENS})
    assert body["id"].startswith("cmpl-")
    assert body["object"] == "text_completion"
    assert body["model"] == SERVED and isinstance(body["created"], int)
    [choice] = body["choices"]
    assert choice == {
        "index": 0,
        "text": completion_reference.text,
        "logprobs": None,
        "finish_reason": completion_reference.finish_reason,
    }
    prompt_tokens, completion_tokens = len(completion_reference.prompt_token_ids), len(completion_reference.token_ids)
    assert body["usage"] == {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": 0},  # a prompt too short for the prefix cache
    }
    assert body["speculation"]["drafter"] == "prompt-lookup"  # the service's default
    assert body["speculation"]["generated_tokens"] == completion_tokens


@pytest.mark.parametrize("drafter", ["none", "prompt-lookup", f"model:{DRAFT}"])
def test_every_drafter_gives_the_same_text(client, completion_reference, drafter):
    body = post_ok(client, "/v1/completions", {"prompt": PROMPT, "max_tokens": MAX_TOKENS, "drafter": drafter})
    assert body["choices"][0]["text"] == completion_reference.text
    assert body["speculation"]["drafter"] == drafter
    if drafter == "prompt-lookup":
        assert body["speculation"]["accepted_tokens"] > 0, "the test should exercise accepted drafts"


def test_default_max_tokens_comes_from_the_config(model):
    client = make_app(model, default_max_tokens=3).test_client()
    body = post_ok(client, "/v1/completions", {"prompt": PROMPT, "drafter": "none"})
    assert body["usage"]["completion_tokens"] == 3


def test_stop_string_ends_the_text_before_it(client, completion_reference):
    text = completion_reference.text
    assert len(text) >= 9, "the reference must be long enough to hold a stop string"
    stop = text[6:9]
    body = post_ok(client, "/v1/completions", {"prompt": PROMPT, "max_tokens": MAX_TOKENS, "stop": [stop]})
    assert body["choices"][0] == {
        "index": 0,
        "text": text[: text.index(stop)],
        "logprobs": None,
        "finish_reason": "stop",
    }


# --- chat -----------------------------------------------------------------------------------------
def test_chat_completion_answers_through_the_chat_template(client, chat_reference):
    body = post_ok(client, "/v1/chat/completions", {"messages": MESSAGES, "max_tokens": MAX_TOKENS})
    assert body["id"].startswith("chatcmpl-")
    assert body["object"] == "chat.completion"
    [choice] = body["choices"]
    assert choice == {
        "index": 0,
        "message": {"role": "assistant", "content": chat_reference.text, "refusal": None},
        "logprobs": None,
        "finish_reason": chat_reference.finish_reason,
    }
    assert body["usage"]["prompt_tokens"] == len(chat_reference.prompt_token_ids)


def test_chat_needs_a_model_with_a_chat_template(tiny_model):
    response = make_app(tiny_model).test_client().post("/v1/chat/completions", json={"messages": MESSAGES})
    assert response.status_code == 400
    assert response.get_json()["error"] == {
        "message": "model 'tiny' has no chat template; send a prompt to /v1/completions",
        "type": "invalid_request_error",
        "param": "messages",
    }


# --- streaming ------------------------------------------------------------------------------------
@pytest.mark.parametrize("chat", [False, True], ids=["completion", "chat"])
def test_stream_concatenates_to_the_non_streamed_answer(client, completion_reference, chat_reference, chat):
    path, request, reference = (
        ("/v1/chat/completions", {"messages": MESSAGES}, chat_reference)
        if chat
        else ("/v1/completions", {"prompt": PROMPT}, completion_reference)
    )
    response = client.post(path, json={**request, "max_tokens": MAX_TOKENS, "stream": True})
    payloads = sse_payloads(response)
    assert payloads[-1] == "[DONE]"
    *pieces, final = [json.loads(p) for p in payloads[:-1]]
    assert pieces, "the answer should arrive in more than one event"
    assert len({chunk["id"] for chunk in pieces + [final]}) == 1
    assert {chunk["source"] for chunk in pieces} == {"draft", "target"}
    assert all(chunk["choices"][0]["finish_reason"] is None for chunk in pieces)
    if chat:
        assert {chunk["object"] for chunk in pieces + [final]} == {"chat.completion.chunk"}
        assert pieces[0]["choices"][0]["delta"]["role"] == "assistant"
        assert all("role" not in chunk["choices"][0]["delta"] for chunk in pieces[1:] + [final])
        text = "".join(chunk["choices"][0]["delta"].get("content", "") for chunk in pieces)
    else:
        assert {chunk["object"] for chunk in pieces + [final]} == {"text_completion"}
        text = "".join(chunk["choices"][0]["text"] for chunk in pieces)
    assert text == reference.text
    assert final["choices"][0]["finish_reason"] == reference.finish_reason
    assert final["usage"]["completion_tokens"] == len(reference.token_ids)
    assert final["speculation"]["drafter"] == "prompt-lookup"


# --- sampling -------------------------------------------------------------------------------------
def test_seeded_sampling_is_reproducible_streamed_or_not(client):
    def sample(seed, stream=False):
        body = {"prompt": PROMPT, "max_tokens": MAX_TOKENS, "temperature": 1.0, "seed": seed, "stream": stream}
        if not stream:
            return post_ok(client, "/v1/completions", body)["choices"][0]["text"]
        chunks = [json.loads(p) for p in sse_payloads(client.post("/v1/completions", json=body))[:-1]]
        return "".join(chunk["choices"][0]["text"] for chunk in chunks)

    first = sample(7)
    assert sample(7) == first
    assert sample(7, stream=True) == first
    assert sample(8) != first


# --- errors ---------------------------------------------------------------------------------------
LONG_PROMPT = "The quick brown fox jumps over the lazy dog. " * 40


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "message"),
    [
        ("post", "/v1/completions", b'{"prompt": "hi"', 400, "not valid JSON"),
        ("post", "/v1/completions", b"", 400, "the request body is empty"),
        ("post", "/v1/completions", [1, 2], 400, "must be a JSON object, got array"),
        ("post", "/v1/completions", {"max_tokens": 4}, 400, "prompt is required"),
        ("post", "/v1/completions", {"prompt": 42}, 400, "prompt must be a string, got number 42"),
        ("post", "/v1/completions", {"prompt": ""}, 400, "prompt must not be empty"),
        ("post", "/v1/completions", {"prompt": "hi", "max_tokens": 0}, 400, "max_tokens must be in [1, 2048], got 0"),
        ("post", "/v1/completions", {"prompt": "hi", "max_tokens": 2049}, 400, "max_tokens must be in [1, 2048]"),
        ("post", "/v1/completions", {"prompt": "hi", "max_tokens": "8"}, 400, "max_tokens must be an integer"),
        ("post", "/v1/completions", {"prompt": "hi", "max_tokens": True}, 400, "max_tokens must be an integer"),
        ("post", "/v1/completions", {"prompt": "hi", "temperature": -1}, 400, "temperature must be in [0, 2]"),
        ("post", "/v1/completions", {"prompt": "hi", "temperature": 3}, 400, "temperature must be in [0, 2], got 3"),
        ("post", "/v1/completions", {"prompt": "hi", "top_p": 0}, 400, "top_p must be in (0, 1], got 0"),
        ("post", "/v1/completions", {"prompt": "hi", "stop": list("abcde")}, 400, "at most 4 strings, got 5"),
        ("post", "/v1/completions", {"prompt": "hi", "stop": ["a", 1]}, 400, "stop[1] must be a non-empty string"),
        ("post", "/v1/completions", {"prompt": "hi", "drafter": "ngram"}, 400, "unknown drafter 'ngram'"),
        ("post", "/v1/completions", {"prompt": "hi", "drafter": "model:no-such-model"}, 400, "cannot use drafter"),
        ("post", "/v1/completions", {"prompt": "hi", "drafter": "model:/etc"}, 400, "is not served here"),
        ("post", "/v1/completions", {"prompt": "hi", "model": "gpt-4"}, 400, "this server serves 'tiny'"),
        ("post", "/v1/completions", {"prompt": "hi", "max_tokens": 600}, 400, "more than the model's context of 512"),
        ("post", "/v1/completions", {"prompt": LONG_PROMPT, "max_tokens": 400}, 400, "max_tokens is 400"),
        ("post", "/v1/chat/completions", {"prompt": "hi"}, 400, "messages is required"),
        ("post", "/v1/chat/completions", {"messages": [{"role": "bot", "content": "x"}]}, 400, "messages[0].role"),
        ("post", "/v1/completions", b"x" * 1_000_001, 413, "larger than the limit of 1000000 bytes"),
        ("get", "/v1/nothing", None, 404, "no such endpoint: /v1/nothing"),
        ("get", "/v1/completions", None, 405, "method GET is not allowed on /v1/completions"),
        ("post", "/healthz", {}, 405, "allowed: GET"),
    ],
)
def test_bad_requests_get_a_json_error(client, method, path, body, status, message):
    if isinstance(body, bytes):
        response = client.open(path, method=method.upper(), data=body, content_type="application/json")
    else:
        response = client.open(path, method=method.upper(), json=body)
    assert response.status_code == status
    assert response.mimetype == "application/json"
    error = response.get_json()["error"]
    assert message in error["message"]
    assert error["type"] == "invalid_request_error"


class BrokenPool(ModelPool):
    def get(self, name):
        raise RuntimeError("secret detail")


def test_an_unexpected_failure_is_logged_and_answered_with_a_json_500(caplog):
    client = create_app(ServiceConfig(model=SERVED), BrokenPool()).test_client()
    response = client.post("/v1/completions", json={"prompt": "hi"})
    assert response.status_code == 500
    assert response.get_json()["error"]["type"] == "server_error"
    assert "secret" not in response.get_data(as_text=True)
    assert "secret detail" in caplog.text


# --- concurrency ----------------------------------------------------------------------------------
def test_concurrent_requests_get_the_text_they_get_alone(app):
    prompts = ["The dog sleeps.", "def add(a, b):", "Speculative decoding drafts", "Grammar correction returns"]
    drafters = ["none", "prompt-lookup", f"model:{DRAFT}", "prompt-lookup"]
    bodies = [{"prompt": p, "max_tokens": MAX_TOKENS, "drafter": d} for p, d in zip(prompts, drafters)]
    alone = [post_ok(app.test_client(), "/v1/completions", body)["choices"][0]["text"] for body in bodies]

    together: list = [None] * len(bodies)
    start = threading.Barrier(len(bodies), timeout=60)

    def run(i):
        client = app.test_client()
        start.wait()
        together[i] = post_ok(client, "/v1/completions", bodies[i])["choices"][0]["text"]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(bodies))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert together == alone


# --- predicted outputs ----------------------------------------------------------------------


@pytest.mark.parametrize("prediction", ["exact", "edited", "parts"])
def test_predicted_output_drafts_from_the_prediction_without_changing_the_answer(client, chat_reference, prediction):
    text = chat_reference.text
    content = {
        "exact": text,
        "edited": text[: len(text) // 2] + " something else entirely",
        "parts": [{"type": "text", "text": text[:5]}, {"type": "text", "text": text[5:]}],
    }[prediction]
    body = post_ok(
        client,
        "/v1/chat/completions",
        {"messages": MESSAGES, "max_tokens": MAX_TOKENS, "prediction": {"type": "content", "content": content}},
    )
    assert body["choices"][0]["message"]["content"] == text
    details = body["usage"]["completion_tokens_details"]
    assert details["accepted_prediction_tokens"] > 0
    assert details["accepted_prediction_tokens"] + details["rejected_prediction_tokens"] > 0
    assert body["speculation"]["drafter"] == "prediction"


@pytest.mark.parametrize(
    "prediction, message",
    [
        ("text", "prediction must be"),
        ({"type": "other", "content": "x"}, "prediction must be"),
        ({"type": "content", "content": 5}, "prediction.content must be a string"),
        ({"type": "content", "content": [{"type": "image"}]}, "parts must be"),
    ],
)
def test_bad_predictions_are_rejected(client, prediction, message):
    response = client.post("/v1/chat/completions", json={"messages": MESSAGES, "prediction": prediction})
    assert response.status_code == 400
    assert message in response.get_json()["error"]["message"]
    assert response.get_json()["error"]["param"] == "prediction"

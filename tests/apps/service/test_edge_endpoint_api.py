"""``specdraft edge serve``'s OpenAI-compatible endpoint, driven by the real ``openai`` SDK over loopback:
the endpoint (waitress, in this process) drafts with a small local model and a verify server in its
own process (``tests/edge/edge_server_main.py``) verifies. Every answer equals the server model's
own greedy output; answers carry ``speculation``; streamed chunks carry ``unverified`` flags; bad
requests are 400s that name the field; with the server gone the answer goes on, flagged unverified."""

import json
import subprocess
import sys
import urllib.error
import urllib.request

import openai
import pytest
from edge_endpoint_support import draft_model, free_port, greedy_text, laptop_endpoint, make_chat_model, verify_server

QUESTION = [{"role": "user", "content": "The quick brown fox"}]


@pytest.fixture(scope="module")
def server_model(tokenizer):
    return make_chat_model(tokenizer)  # the verify server's weights


@pytest.fixture(scope="module")
def draft(tokenizer):
    return draft_model(tokenizer)


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory, draft):
    with verify_server(tmp_path_factory.mktemp("verify")) as url:
        with laptop_endpoint(url, draft) as live:
            yield live


@pytest.fixture(scope="module")
def client(endpoint):
    with openai.OpenAI(base_url=endpoint.url + "/v1", api_key="unused", max_retries=0, timeout=120) as sdk:
        yield sdk


def test_chat_equals_the_servers_greedy_output(client, server_model):
    want = greedy_text(server_model, server_model.encode_chat(QUESTION), 16)
    answer = client.chat.completions.create(model="gpt-4o-mini", messages=QUESTION, max_tokens=16)
    assert answer.choices[0].message.content == want
    assert answer.model == "tiny"  # the server's model, whatever name the client sent
    speculation = answer.model_extra["speculation"]
    assert speculation["unverified_tokens"] == 0 and all(speculation["verified"])
    assert speculation["round_trips"] >= 1 and speculation["server_forward_passes"] >= 1
    assert answer.usage.completion_tokens == speculation["generated_tokens"] == len(speculation["verified"])


def test_streamed_chat_equals_it_and_flags_every_chunk(client, server_model):
    want = greedy_text(server_model, server_model.encode_chat(QUESTION), 16)
    chunks = list(client.chat.completions.create(model="tiny", messages=QUESTION, max_tokens=16, stream=True))
    text_chunks = [c for c in chunks if c.choices and c.choices[0].delta.content]
    assert "".join(c.choices[0].delta.content for c in text_chunks) == want
    assert all(c.model_extra["unverified"] is False and c.model_extra["source"] == "verified" for c in text_chunks)
    assert all(c.model_extra["round_trip_ms"] > 0 for c in text_chunks)
    last = chunks[-1]
    assert last.choices[0].finish_reason in ("length", "stop")
    assert last.model_extra["speculation"]["unverified_tokens"] == 0


def test_text_completion_streamed_and_not(client, server_model):
    want = greedy_text(server_model, server_model.encode("The quick"), 10)
    answer = client.completions.create(model="tiny", prompt="The quick", max_tokens=10)
    assert answer.choices[0].text == want and answer.model_extra["speculation"]["round_trips"] >= 1
    streamed = "".join(
        c.choices[0].text
        for c in client.completions.create(model="tiny", prompt="The quick", max_tokens=10, stream=True)
        if c.choices
    )
    assert streamed == want
    ids = server_model.encode("The quick")
    assert client.completions.create(model="tiny", prompt=ids, max_tokens=10).choices[0].text == want


def test_models_and_health(client, endpoint):
    assert [m.id for m in client.models.list()] == ["tiny"]
    health = get_json(endpoint.url + "/healthz")
    assert health["status"] == "ok" and health["server_reachable"] is True and health["draft_model"] == "tiny-draft"


@pytest.mark.parametrize(
    "body, param",
    [
        ({"messages": QUESTION, "n": 2}, "n"),
        ({"messages": QUESTION, "logprobs": True}, "logprobs"),
        ({"messages": [{"role": "robot", "content": "hi"}]}, "messages[0].role"),
        ({"messages": QUESTION, "max_tokens": 0}, "max_tokens"),
        ({"messages": QUESTION, "max_tokens": 100000}, "max_tokens"),
        ({"messages": QUESTION, "tools": [{"type": "function"}]}, "tools[0].function"),  # the tool lacks its function
        ({"messages": QUESTION, "temperature": "hot"}, "temperature"),
        ({"messages": QUESTION, "response_format": {"type": "json_object"}}, "response_format"),
        ({"messages": QUESTION, "tools": [{"type": "function", "function": {"name": "get_time"}}]}, "tools"),
    ],
)
def test_bad_requests_are_400s_naming_the_field(endpoint, body, param):
    status, answer = post(endpoint.url + "/v1/chat/completions", body)
    assert status == 400 and answer["error"]["param"] == param and answer["error"]["type"] == "invalid_request_error"


def test_bad_bodies_and_routes_are_json_errors(endpoint):
    assert post(endpoint.url + "/v1/completions", {"prompt": [10**9]})[0] == 400
    assert post(endpoint.url + "/v1/completions", {"prompt": ["a", "b"]})[0] == 400
    status, answer = post(endpoint.url + "/v1/chat/completions", b"{not json")
    assert status == 400 and "JSON" in answer["error"]["message"]
    status, answer = post(endpoint.url + "/v1/nothing", {})
    assert status == 404 and "error" in answer


def test_a_long_prompt_is_refused_before_generating(endpoint):
    status, answer = post(endpoint.url + "/v1/completions", {"prompt": "fox " * 600, "max_tokens": 16})
    assert status == 400 and "context" in answer["error"]["message"]


def test_with_the_server_gone_the_answer_is_the_local_models_flagged_unverified(draft):
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    want = greedy_text(draft, draft.encode_chat(QUESTION), 8)
    with laptop_endpoint(dead, draft, timeout_s=2.0) as live:
        with openai.OpenAI(base_url=live.url + "/v1", api_key="unused", max_retries=0, timeout=120) as client:
            chunks = list(client.chat.completions.create(model="tiny", messages=QUESTION, max_tokens=8, stream=True))
        health = get_json(live.url + "/healthz")
    text_chunks = [c for c in chunks if c.choices and c.choices[0].delta.content]
    assert "".join(c.choices[0].delta.content for c in text_chunks) == want
    assert all(c.model_extra["unverified"] is True for c in text_chunks)
    speculation = chunks[-1].model_extra["speculation"]
    assert speculation["unverified_tokens"] == speculation["generated_tokens"] > 0 and not any(speculation["verified"])
    assert health["server_reachable"] is False and health["model"] == "tiny-draft"


def test_a_key_the_server_refuses_is_a_502_that_says_so(tmp_path, draft):
    with verify_server(tmp_path) as url, laptop_endpoint(url, draft, key="not-a-key-0123456789abcdef") as live:
        status, answer = post(live.url + "/v1/chat/completions", {"messages": QUESTION, "max_tokens": 4})
    assert status == 502 and "refused" in answer["error"]["message"]


def test_the_endpoint_answers_only_requests_addressed_to_this_machine(endpoint):
    request = urllib.request.Request(endpoint.url + "/v1/models", headers={"Host": "evil.example"})
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(request, timeout=30)
    error.value.close()
    assert error.value.code == 421


def test_the_laptop_side_imports_no_torch():
    code = (
        "import sys, specdraft.apps.service.edge_model, specdraft.apps.cli.edge_serve, specdraft.apps.cli.edge_chat; "
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules, 'torch imported'"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def post(url, body):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(url, data, {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        with error:
            return error.code, json.load(error)


def get_json(url):
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.load(response)


def test_the_config_refuses_what_cannot_work():
    from specdraft.apps.service.edge_model import endpoint_config

    for bad in [
        dict(server="gpu-box:8000", key="k"),
        dict(server="http://x", key=" "),
        dict(server="http://x", key="k", timeout_s=0),
        dict(server="http://x", key="k", default_max_tokens=10, max_tokens_limit=5),
    ]:
        with pytest.raises(ValueError):
            endpoint_config(draft_model="local", **bad)


def test_the_document_lists_the_edge_page(endpoint):
    paths = get_json(endpoint.url + "/openapi.json")["paths"]
    assert "/demo/" in paths and "/v1/chat/completions" in paths
    with urllib.request.urlopen(endpoint.url + "/demo/", timeout=30) as page:
        assert page.status == 200 and "edge.js" in page.read().decode()

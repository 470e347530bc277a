"""``POST /v1/responses`` on the tiny models: the translation into a chat request, the store and its
bound, ``store: false``, the 400s in the Responses API's names, the API key, the answer's shape and
its stream's event order, and the text against the chat completion of the same conversation and
plain decoding (the target's own, with and without a drafter)."""

from __future__ import annotations

import json

import pytest
from test_service_api import MESSAGES, greedy
from tiny_service import SERVED, make_app, make_chat_model

from specdraft.apps.service.protocol.errors import RequestError
from specdraft.apps.service.protocol.openai_responses_request import ResponsesBody, to_chat
from specdraft.apps.service.responses_answer import assistant_message
from specdraft.apps.service.responses_api import ResponseStore

TOKENS = 12
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "the weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"enum": ["Paris", "Rome"]}}, "required": ["city"]},
}
CALL = {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'}
OUTPUT = {"type": "function_call_output", "call_id": "call_1", "output": "sunny"}


@pytest.fixture(scope="module")
def model(tokenizer):
    return make_chat_model(tokenizer)


@pytest.fixture(scope="module")
def client(model):
    return make_app(model).test_client()


def body(config=None, **fields):
    from specdraft.apps.service import ServiceConfig

    return ResponsesBody.parse(fields, config or ServiceConfig(model=SERVED))


def post(client, **fields):
    return client.post("/v1/responses", json={"max_output_tokens": TOKENS, **fields})


def events(response) -> list[dict]:
    """The stream's payloads, each checked against its ``event:`` line."""
    payloads = []
    for block in response.get_data(as_text=True).strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.split("\n"))
        if lines["data"] == "[DONE]":
            continue
        payload = json.loads(lines["data"])
        assert lines.get("event") == payload.get("type"), block
        payloads.append(payload)
    return payloads


# --- the translation ------------------------------------------------------------------------------
def test_a_string_input_is_one_user_message_after_the_instructions():
    chat = to_chat(body(input="Hi", instructions="Be brief.", max_output_tokens=5, temperature=0.5, top_p=0.9))
    assert chat.body == {
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        "temperature": 0.5,
        "top_p": 0.9,
        "max_completion_tokens": 5,
    }
    assert chat.conversation == ({"role": "user", "content": "Hi"},)  # instructions are not carried over


def test_items_become_messages_calls_join_their_assistant_turn():
    items = [
        {"role": "user", "content": [{"type": "input_text", "text": "Weather "}, {"type": "input_text", "text": "?"}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Let me look."}]},
        CALL,
        {**CALL, "call_id": "call_2", "arguments": '{"city": "Rome"}'},
        OUTPUT,
        {**OUTPUT, "call_id": "call_2", "output": [{"type": "input_text", "text": "rainy"}]},
    ]
    chat = to_chat(body(input=items, tools=[WEATHER], tool_choice={"type": "function", "name": "get_weather"}))
    calls = [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
        {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}},
    ]
    assert chat.body["messages"] == [
        {"role": "user", "content": "Weather \n?"},  # parts joined as the chat endpoint joins them
        {"role": "assistant", "content": "Let me look.", "tool_calls": calls},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "call_2", "content": "rainy"},
    ]
    function = {k: v for k, v in WEATHER.items() if k != "type"}
    assert chat.body["tools"] == [{"type": "function", "function": function}]
    assert chat.body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert chat.sources[1] == ("input[1]", ("input[2]", "input[3]"))


def test_text_format_is_the_response_format():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    fmt = {"type": "json_schema", "name": "A", "schema": schema, "strict": True}
    assert to_chat(body(input="x", text={"format": fmt})).body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "A", "schema": schema, "strict": True},
    }
    assert to_chat(body(input="x", text={"format": {"type": "json_object"}})).body["response_format"] == {
        "type": "json_object"
    }


def test_a_stored_conversation_comes_first_and_is_not_changed():
    history = ({"role": "user", "content": "Hi"}, {"role": "assistant", "content": None, "tool_calls": [CALL]})
    chat = to_chat(body(input=[CALL | {"call_id": "call_9"}], instructions="I"), history)
    assert chat.body["messages"][1:3] == list(history)
    assert len(chat.body["messages"]) == 4 and history[1]["tool_calls"] == [CALL]  # a new turn, history untouched
    assert chat.conversation[:2] == history


def test_an_answer_is_stored_as_the_chat_message_it_came_from():
    message = {"type": "message", "content": [{"type": "output_text", "text": "Hi", "annotations": []}]}
    call = {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}
    assert assistant_message([message]) == {"role": "assistant", "content": "Hi"}
    assert assistant_message([call]) == {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
    }


# --- the store ------------------------------------------------------------------------------------
def test_the_store_keeps_the_most_recently_used():
    store = ResponseStore(2)
    for name in "abc":
        store.keep(name, ({"role": "user", "content": name},), {"id": name})
    assert len(store) == 2
    with pytest.raises(RequestError) as refused:
        store.conversation("a")
    assert refused.value.param == "previous_response_id" and refused.value.code == "previous_response_not_found"
    store.conversation("b")  # used: now the most recent
    store.keep("d", (), {"id": "d"})
    assert store.conversation("b") and store.conversation("d") == ()
    with pytest.raises(RequestError):
        store.conversation("c")


def test_previous_response_id_continues_and_store_false_is_not_kept(model):
    client = make_app(model, max_stored_responses=1).test_client()
    first = post(client, input="What does the fox do?", instructions="Be brief.").get_json()
    reference = greedy(
        model,
        model.encode_chat(
            [
                {"role": "user", "content": "What does the fox do?"},
                {"role": "assistant", "content": first["output"][0]["content"][0]["text"]},
                {"role": "user", "content": "And the dog?"},
            ]
        ),
        TOKENS,
    )
    second = post(client, input="And the dog?", previous_response_id=first["id"]).get_json()
    assert second["output"][0]["content"][0]["text"] == reference.text
    assert second["previous_response_id"] == first["id"]
    # max_stored_responses=1: the second pushed the first out
    gone = post(client, input="x", previous_response_id=first["id"])
    assert gone.status_code == 400 and gone.get_json()["error"]["param"] == "previous_response_id"
    unstored = post(client, input="x", store=False).get_json()
    assert unstored["store"] is False
    refused = post(client, input="y", previous_response_id=unstored["id"])
    assert refused.status_code == 400
    assert refused.get_json()["error"]["param"] == "previous_response_id"
    assert "store: false" in refused.get_json()["error"]["message"]


def test_a_stored_response_is_read_back_and_deleted(client):
    made = post(client, input="What does the fox do?").get_json()
    streamed = [e for e in events(post(client, input="And the dog?", stream=True)) if "response" in e][-1:]
    assert streamed[0]["type"] in ("response.completed", "response.incomplete")
    unstored = post(client, input="x", store=False).get_json()
    for response in (made, streamed[0]["response"]):
        got = client.get(f"/v1/responses/{response['id']}")
        assert got.status_code == 200 and got.get_json() == response
    deleted = client.delete(f"/v1/responses/{made['id']}")
    assert deleted.get_json() == {"id": made["id"], "object": "response.deleted", "deleted": True}
    for path, method in ((made["id"], "get"), (made["id"], "delete"), (unstored["id"], "get")):
        missing = getattr(client, method)(f"/v1/responses/{path}")
        error = missing.get_json()["error"]
        assert missing.status_code == 404 and error["code"] == "response_not_found" and path in error["message"]
    refused = post(client, input="y", previous_response_id=made["id"])  # deleted: nothing to continue
    assert refused.status_code == 400 and refused.get_json()["error"]["param"] == "previous_response_id"


# --- answers --------------------------------------------------------------------------------------
@pytest.mark.parametrize("drafter", ["none", "prompt-lookup"])
def test_the_text_is_the_chat_completions_and_the_targets_own(client, model, drafter):
    chat = client.post(
        "/v1/chat/completions", json={"messages": MESSAGES, "max_tokens": TOKENS, "drafter": drafter}
    ).get_json()
    response = post(client, input=MESSAGES[1]["content"], instructions=MESSAGES[0]["content"], drafter=drafter)
    answer = response.get_json()
    assert response.status_code == 200, answer
    [message] = answer["output"]
    assert message["type"] == "message" and message["role"] == "assistant" and message["id"].startswith("msg_")
    assert message["content"][0]["text"] == chat["choices"][0]["message"]["content"]
    assert message["content"][0]["text"] == greedy(model, model.encode_chat(MESSAGES), TOKENS).text
    assert answer["object"] == "response" and answer["id"].startswith("resp_") and answer["model"] == SERVED
    cut = chat["choices"][0]["finish_reason"] == "length"
    assert answer["status"] == ("incomplete" if cut else "completed")
    assert answer["incomplete_details"] == ({"reason": "max_output_tokens"} if cut else None)
    tokens = chat["usage"]["completion_tokens"]
    assert answer["usage"] == {
        "input_tokens": chat["usage"]["prompt_tokens"],
        "input_tokens_details": {"cached_tokens": answer["usage"]["input_tokens_details"]["cached_tokens"]}
        | {"cache_write_tokens": 0},
        "output_tokens": tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": chat["usage"]["prompt_tokens"] + tokens,
    }
    assert answer["speculation"]["drafter"] == drafter and set(answer["speculation"]) == set(chat["speculation"])
    assert set(answer["spec_decode_metrics"]) == set(chat["spec_decode_metrics"])


def test_the_stream_sends_the_documented_events_in_order(client):
    whole = post(client, input="What does the fox do?").get_json()
    payloads = events(post(client, input="What does the fox do?", stream=True))
    kinds = [p["type"] for p in payloads]
    deltas = kinds.count("response.output_text.delta")
    assert deltas >= 1
    assert kinds == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        *["response.output_text.delta"] * deltas,
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.incomplete" if whole["status"] == "incomplete" else "response.completed",
    ]
    assert [p["sequence_number"] for p in payloads] == list(range(len(payloads)))
    text = "".join(p["delta"] for p in payloads if p["type"] == "response.output_text.delta")
    assert {p.get("source") for p in payloads if p["type"] == "response.output_text.delta"} <= {"draft", "target"}
    final = payloads[-1]["response"]
    assert text == payloads[-4]["text"] == final["output"][0]["content"][0]["text"]
    assert text == whole["output"][0]["content"][0]["text"]
    counts = ("input_tokens", "output_tokens", "total_tokens")  # cached_tokens: the prefix cache's, which differs
    assert [final["usage"][k] for k in counts] == [whole["usage"][k] for k in counts]
    assert final["output"][0]["id"] == payloads[2]["item"]["id"]
    assert payloads[0]["response"]["status"] == "in_progress" and payloads[0]["response"]["usage"] is None


def test_a_required_call_streams_as_a_function_call_item(client, model):
    fields = {"input": "Weather?", "tools": [WEATHER], "tool_choice": "required", "max_output_tokens": 80}
    whole = post(client, **fields).get_json()
    [call] = whole["output"]
    assert call["type"] == "function_call" and call["name"] == "get_weather" and call["call_id"].startswith("call_")
    assert json.loads(call["arguments"])["city"] in ("Paris", "Rome")
    payloads = events(post(client, **fields, stream=True))
    kinds = [p["type"] for p in payloads]
    pieces = kinds.count("response.function_call_arguments.delta")
    assert kinds == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        *["response.function_call_arguments.delta"] * pieces,
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    arguments = "".join(p["delta"] for p in payloads if p["type"] == "response.function_call_arguments.delta")
    assert arguments == payloads[-3]["arguments"] == call["arguments"]
    assert payloads[-1]["response"]["output"][0]["call_id"] == payloads[2]["item"]["call_id"]


# --- errors ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "fields, param, words",
    [
        ({}, "input", "input is required"),
        ({"input": []}, "input", "at least one item"),
        ({"input": [{"type": "reasoning"}]}, "input[0].type", "must be one of"),
        ({"input": [{"role": "user", "content": [{"type": "input_image"}]}]}, "input[0].content[0]", "text only"),
        ({"input": [{"type": "function_call_output", "call_id": "c"}]}, "input[0].output", "is required"),
        ({"input": [OUTPUT]}, "input[0].call_id", "answers no earlier tool call"),
        ({"input": [CALL | {"arguments": "[1]"}]}, "input[0].arguments", "JSON object"),
        ({"input": "x", "tools": [{"type": "web_search"}]}, "tools[0].type", '"function"'),
        ({"input": "x", "tools": [WEATHER, WEATHER]}, "tools[1].name", "unique"),
        ({"input": "x", "tools": [WEATHER], "tool_choice": {"type": "function", "name": "f"}}, "tool_choice.name", ""),
        ({"input": "x", "tool_choice": "required"}, "tool_choice", "needs tools"),
        ({"input": "x", "text": {"format": {"type": "json_schema"}}}, "text.format.name", "is required"),
        ({"input": "x", "max_output_tokens": 10**6}, "max_output_tokens", "max_output_tokens must be"),
        ({"input": "x", "temperature": 9.0}, "temperature", ""),
        ({"input": "x", "background": True}, "background", ""),
        ({"input": "x", "previous_response_id": "resp_none"}, "previous_response_id", "not a stored response"),
    ],
)
def test_refusals_name_the_responses_field(client, fields, param, words):
    response = client.post("/v1/responses", json=fields)
    error = response.get_json()["error"]
    assert response.status_code == 400, error
    assert error["param"] == param and words in error["message"], error
    assert set(error) <= {"message", "type", "param", "code"} and error["type"] == "invalid_request_error"


def test_a_key_is_needed_when_the_server_has_keys(model, tmp_path):
    keys = tmp_path / "keys"
    keys.write_text("sk-test-responses-key-0123456789 read\n")
    client = make_app(model, api_key_file=str(keys)).test_client()
    refused = client.post("/v1/responses", json={"input": "x"})
    assert refused.status_code == 401 and refused.get_json()["error"]["code"] == "invalid_api_key"
    headers = {"Authorization": "Bearer sk-test-responses-key-0123456789"}
    assert client.post("/v1/responses", json={"input": "x", "max_output_tokens": 2}, headers=headers).status_code == 200


def test_the_openai_sdk_retrieves_and_deletes_a_stored_response(model):
    """``client.responses.retrieve`` / ``delete`` of the real ``openai`` SDK over real HTTP (the
    tiny model behind ``LiveServer``), parsed without warnings."""
    import warnings

    from live_server import LiveServer
    from openai import NotFoundError, OpenAI

    with LiveServer(make_app(model)) as server:
        client = OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            made = client.responses.create(model=SERVED, input="What does the fox do?", max_output_tokens=TOKENS)
            got = client.responses.retrieve(made.id)
            assert got.id == made.id and got.output_text == made.output_text
            client.responses.delete(made.id)
        parsing = [str(w.message) for w in caught if "openai" in w.filename or "pydantic" in w.filename]
        assert parsing == []  # the SDK parsed every answer without a warning
        with pytest.raises(NotFoundError):
            client.responses.retrieve(made.id)

"""Structured outputs and tool calls through the real ``openai`` SDK against a live server on loopback
(the tiny service app): ``response_format`` (``client.chat.completions.parse`` with a pydantic model,
JSON mode), tool calls with tool_choice required, named and auto, streamed and not, histories that
replay calls, the 400s, and the fields OpenAI's schema marks required.

Every answer must be the target's own: the server's text equals plain constrained decoding
(``SpeculativeGenerator.generate`` with the same constraint and no drafter), whatever drafts the
grammar and the drafter made; the calls are that text read by ``parse_tool_calls``.
"""

import json
from typing import Literal

import pytest
import requests
from live_server import LiveServer
from openai import BadRequestError, OpenAI
from openai.lib._pydantic import to_strict_json_schema
from pydantic import BaseModel
from test_service_api import MESSAGES, PROMPT, greedy
from tiny_service import SERVED, make_app, make_chat_model

from specdraft.constrained import Constraint
from specdraft.tool_calls import ToolChoice, ToolSpec, parse_tool_calls, tags_are_tokens, tool_call_constraint

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "the weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"enum": ["Paris", "Rome"]}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}
TIME = {
    "type": "function",
    "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}, "additionalProperties": False}},
}
TOOLS = [WEATHER, TIME]
NAMED = {"type": "function", "function": {"name": "get_weather"}}
CALL_TOKENS = 80  # enough for one call in the tiny vocabulary


class Weather(BaseModel):
    city: Literal["Paris", "Rome"]
    sunny: bool


@pytest.fixture(scope="module")
def model(tokenizer):
    return make_chat_model(tokenizer)


@pytest.fixture(scope="module")
def server(model):
    with LiveServer(make_app(model)) as live:
        yield live


@pytest.fixture(scope="module")
def client(server):
    return OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0, timeout=120)


def reference(model, constraint, max_tokens, messages=MESSAGES, tools=None):
    """Plain constrained decoding of the chat prompt (no drafter)."""
    return greedy(model, model.encode_chat(messages, tools=tools), max_tokens, constraint=constraint)


def call_constraint(model, choice: ToolChoice, parallel=True, tools=TOOLS):
    specs = [ToolSpec.from_openai(tool) for tool in tools]
    return tool_call_constraint(specs, choice, parallel, tag_tokens=tags_are_tokens(model.tokenizer))


def streamed_calls(chunks) -> tuple[str, list[dict], list[str]]:
    """What a streamed answer adds up to: content, calls (id, name, arguments), finish reasons; each
    call's id and name must come once, in its first delta."""
    content, calls, reasons = "", [], []
    for chunk in chunks:
        for choice in chunk.choices:
            content += choice.delta.content or ""
            for delta in choice.delta.tool_calls or []:
                if delta.index == len(calls):
                    assert delta.id and delta.type == "function" and delta.function.name
                    calls.append(
                        {"id": delta.id, "name": delta.function.name, "arguments": delta.function.arguments or ""}
                    )
                else:
                    assert delta.id is None and delta.function.name is None
                    calls[delta.index]["arguments"] += delta.function.arguments
            if choice.finish_reason:
                reasons.append(choice.finish_reason)
    return content, calls, reasons


# --- response_format ------------------------------------------------------------------------------
def test_sdk_parse_with_a_pydantic_model_gives_the_constrained_answer(client, model):
    completion = client.chat.completions.parse(model=SERVED, messages=MESSAGES, response_format=Weather, max_tokens=40)
    expected = reference(model, Constraint.json_schema(to_strict_json_schema(Weather)), 40)
    assert expected.finish_reason == "stop"
    message = completion.choices[0].message
    assert message.content == expected.text and isinstance(message.parsed, Weather)
    assert message.refusal is None and completion.choices[0].finish_reason == "stop"
    speculation = completion.model_extra["speculation"]
    assert 0 < speculation["forced_tokens"] <= speculation["forced_drafted"]  # the keys and braces were drafted
    assert speculation["exact"] is True


def test_json_mode_streamed_and_not(client, model):
    expected = reference(model, Constraint.json_object(), 30)
    answer = client.chat.completions.create(
        model=SERVED, messages=MESSAGES, response_format={"type": "json_object"}, max_tokens=30
    )
    assert (
        answer.choices[0].message.content == expected.text and answer.choices[0].finish_reason == expected.finish_reason
    )
    if expected.finish_reason == "stop":
        assert isinstance(json.loads(expected.text), dict)
    else:
        assert expected.text.startswith("{")
    chunks = list(
        client.chat.completions.create(
            model=SERVED, messages=MESSAGES, response_format={"type": "json_object"}, max_tokens=30, stream=True
        )
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == expected.text


def test_a_schema_the_answer_cannot_finish_in_max_tokens_ends_with_length(client, model):
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
        "required": ["name", "age"],
    }
    response_format = {"type": "json_schema", "json_schema": {"name": "person", "schema": schema}}
    answer = client.chat.completions.create(
        model=SERVED, messages=MESSAGES, response_format=response_format, max_tokens=3
    )
    assert answer.choices[0].finish_reason == "length"
    assert answer.choices[0].message.content == reference(model, Constraint.json_schema(schema), 3).text


def test_response_format_on_the_text_endpoint(client, model):
    expected = greedy(
        model, model.encode(PROMPT), 40, constraint=Constraint.json_schema(to_strict_json_schema(Weather))
    )
    answer = client.completions.create(
        model=SERVED,
        prompt=PROMPT,
        max_tokens=40,
        extra_body={
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "weather", "schema": to_strict_json_schema(Weather), "strict": True},
            }
        },
    )
    assert answer.choices[0].text == expected.text
    Weather.model_validate_json(answer.choices[0].text)


# --- tool calls -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("tool_choice", "parallel", "finish_reason"),
    [
        (NAMED, None, "stop"),  # a named function's call ends with "stop", as OpenAI's does
        ("required", False, "tool_calls"),
    ],
)
def test_constrained_tool_calls_streamed_and_not(client, model, tool_choice, parallel, finish_reason):
    choice = ToolChoice("function", "get_weather") if isinstance(tool_choice, dict) else ToolChoice("required")
    expected = reference(model, call_constraint(model, choice, parallel is not False), CALL_TOKENS, tools=TOOLS)
    assert expected.finish_reason == "stop"
    [call] = parse_tool_calls(expected.text).calls
    extra = {} if parallel is None else {"parallel_tool_calls": parallel}
    answer = client.chat.completions.create(
        model=SERVED, messages=MESSAGES, tools=TOOLS, tool_choice=tool_choice, max_tokens=CALL_TOKENS, **extra
    )
    [made] = answer.choices[0].message.tool_calls
    assert (made.type, made.function.name, made.function.arguments) == ("function", call.name, call.arguments)
    assert made.id.startswith("call_") and json.loads(made.function.arguments) is not None
    assert answer.choices[0].message.content is None and answer.choices[0].finish_reason == finish_reason
    chunks = list(
        client.chat.completions.create(
            model=SERVED,
            messages=MESSAGES,
            tools=TOOLS,
            tool_choice=tool_choice,
            max_tokens=CALL_TOKENS,
            stream=True,
            **extra,
        )
    )
    content, calls, reasons = streamed_calls(chunks)
    assert (
        content == ""
        and [(c["name"], c["arguments"]) for c in calls] == [(call.name, call.arguments)]
        and reasons == [finish_reason]
    )
    assert chunks[0].choices[0].delta.role == "assistant"


def test_auto_without_a_call_is_content(client, model):
    expected = reference(model, None, 12, tools=[WEATHER])
    answer = client.chat.completions.create(model=SERVED, messages=MESSAGES, tools=[WEATHER], max_tokens=12)
    message = answer.choices[0].message
    assert message.content == (parse_tool_calls(expected.text).content or "") and message.tool_calls is None
    assert answer.choices[0].finish_reason == expected.finish_reason
    content, calls, reasons = streamed_calls(
        client.chat.completions.create(model=SERVED, messages=MESSAGES, tools=[WEATHER], max_tokens=12, stream=True)
    )
    assert (content, calls, reasons) == (message.content, [], [expected.finish_reason])


def test_a_history_of_calls_reaches_the_template(client, model):
    messages = [
        *MESSAGES,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": [{"type": "text", "text": "sunny, 21 C"}]},
    ]
    as_template_sees_them = [
        *MESSAGES,
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Rome"}}}
            ],
        },
        {"role": "tool", "content": "sunny, 21 C", "tool_call_id": "call_a"},
    ]
    expected = reference(model, None, 12, as_template_sees_them, tools=[WEATHER])
    answer = client.chat.completions.create(
        model=SERVED, messages=messages, tools=[WEATHER], tool_choice="none", max_tokens=12
    )
    assert answer.choices[0].message.content == expected.text  # tool_choice none: the text as it is
    assert answer.usage.prompt_tokens == len(expected.prompt_token_ids)


# --- 400s -----------------------------------------------------------------------------------------
DEEP = {"type": "object", "properties": {"a": {}}}
for _ in range(30):
    DEEP = {"type": "object", "properties": {"a": DEEP}}


def schema_format(schema):
    return {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}


@pytest.mark.parametrize(
    ("fields", "param", "words"),
    [
        (
            {"response_format": schema_format({"type": "object", "properties": {"age": {"type": "int"}}})},
            "response_format.json_schema.schema",
            "/properties/age/type",
        ),
        (
            {"response_format": schema_format({"type": "string", "enum": ["x" * 100] * 400})},
            "response_format.json_schema.schema",
            "bytes; at most",
        ),
        ({"response_format": schema_format(DEEP)}, "response_format.json_schema.schema", "levels deep"),
        (
            {"tools": [{"type": "function", "function": {"name": "get weather"}}]},
            "tools[0].function.name",
            "1-64 letters",
        ),
        (
            {
                "tools": [
                    {
                        "type": "function",
                        "function": {
                            "name": "f",
                            "parameters": {"type": "object", "properties": {"a": {"type": "nope"}}},
                        },
                    }
                ]
            },
            "tools[0].function.parameters",
            "/properties/a/type",
        ),
        (
            {"tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "get_time"}}},
            "tool_choice.function.name",
            "not in tools",
        ),
        ({"tool_choice": "required"}, "tool_choice", "needs tools"),
        (
            {"messages": [*MESSAGES, {"role": "tool", "tool_call_id": "call_x", "content": "42"}]},
            "messages[2].tool_call_id",
            "answers no earlier tool call",
        ),
    ],
)
def test_bad_input_is_a_400_naming_what_and_where(client, model, fields, param, words):
    body = {"model": SERVED, "messages": MESSAGES, "max_tokens": 4, **fields}
    with pytest.raises(BadRequestError) as caught:
        client.chat.completions.create(**body)
    assert caught.value.body["param"] == param and words in caught.value.body["message"], caught.value.body
    answer = client.chat.completions.create(model=SERVED, messages=MESSAGES, max_tokens=4)  # nothing else changed
    assert answer.choices[0].message.content == greedy(model, model.encode_chat(MESSAGES), 4).text


# --- the fields OpenAI's schema marks required ----------------------------------------------------
CHAT_RESPONSE = {"id", "object", "created", "model", "choices", "usage"}
CHAT_CHOICE = {"index", "message", "logprobs", "finish_reason"}
MESSAGE = {"role", "content", "refusal"}
TEXT_CHOICE = {"index", "text", "logprobs", "finish_reason"}
CHUNK = {"id", "object", "created", "model", "choices"}
CHUNK_CHOICE = {"index", "delta", "finish_reason"}
USAGE = {"prompt_tokens", "completion_tokens", "total_tokens"}


def events(response) -> list[dict]:
    lines = [line[len("data: ") :] for line in response.text.split("\n\n") if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    return [json.loads(line) for line in lines[:-1]]


def test_every_answer_carries_the_required_fields(server):
    url = server.url + "/v1"
    tools = {"tools": TOOLS, "tool_choice": NAMED, "max_tokens": CALL_TOKENS}
    for body in ({}, tools, {"response_format": {"type": "json_object"}}):
        answer = requests.post(
            f"{url}/chat/completions", json={"messages": MESSAGES, "max_tokens": 6, **body}, timeout=60
        ).json()
        assert CHAT_RESPONSE <= set(answer) and USAGE <= set(answer["usage"])
        for choice in answer["choices"]:
            assert CHAT_CHOICE <= set(choice) and MESSAGE <= set(choice["message"]) and choice["logprobs"] is None
            assert choice["message"]["refusal"] is None
            for call in choice["message"].get("tool_calls", []):
                assert set(call) == {"id", "type", "function"} and set(call["function"]) == {"name", "arguments"}
        streamed = requests.post(
            f"{url}/chat/completions",
            json={
                "messages": MESSAGES,
                "max_tokens": 6,
                **body,
                "stream": True,
                "stream_options": {"include_usage": True},
            },
            timeout=60,
        )
        chunks = events(streamed)
        for chunk in chunks:
            assert CHUNK <= set(chunk) and all(CHUNK_CHOICE <= set(choice) for choice in chunk["choices"]), chunk
            for choice in chunk["choices"]:
                assert all("index" in call for call in choice["delta"].get("tool_calls", []))
        assert chunks[-1]["choices"] == [] and USAGE <= set(chunks[-1]["usage"])
    text = requests.post(f"{url}/completions", json={"prompt": PROMPT, "max_tokens": 4}, timeout=60).json()
    assert all(TEXT_CHOICE <= set(choice) and choice["logprobs"] is None for choice in text["choices"])
    streamed = requests.post(f"{url}/completions", json={"prompt": PROMPT, "max_tokens": 4, "stream": True}, timeout=60)
    assert all(TEXT_CHOICE <= set(choice) for chunk in events(streamed) for choice in chunk["choices"])

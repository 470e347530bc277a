"""Tool calls and structured outputs on a real model (qwen2.5-coder-0.5b on llama.cpp, greedy),
through the ``openai`` SDK against a live server: the chat template's tools section and ``<tool_call>``
blocks, read back in auto mode and constrained in required mode, streamed and not; a pydantic model's
schema through ``client.chat.completions.parse``. Slow (the server is the session's ``llama_server``); the
answers are short."""

from __future__ import annotations

import json

import pytest
from openai import OpenAI
from pydantic import BaseModel

pytestmark = pytest.mark.slow

MODEL = "qwen2.5-coder-0.5b"
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "the city"}},
            "required": ["city"],
        },
    },
}
TIME = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Get the current time in a time zone",
        "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]},
    },
}
ASK = [{"role": "user", "content": "What is the weather like in Paris right now?"}]


class Person(BaseModel):
    name: str
    age: int


@pytest.fixture(scope="module")
def app(llama_server):
    return llama_server(MODEL).app  # the session's live server of MODEL


@pytest.fixture(scope="module")
def client(llama_server):
    return OpenAI(base_url=llama_server(MODEL).url + "/v1", api_key="x", max_retries=0, timeout=300)


def streamed(chunks) -> tuple[str, list[tuple[str, str]], list[str]]:
    content, calls, reasons = "", [], []
    for chunk in chunks:
        for choice in chunk.choices:
            content += choice.delta.content or ""
            for delta in choice.delta.tool_calls or []:
                if delta.id is not None:
                    calls.append([delta.function.name, delta.function.arguments or ""])
                else:
                    calls[delta.index][1] += delta.function.arguments
            reasons += [choice.finish_reason] if choice.finish_reason else []
    return content, [tuple(call) for call in calls], reasons


def test_auto_reads_the_models_own_call_streamed_and_not(client):
    answer = client.chat.completions.create(
        model=MODEL, messages=ASK, tools=[WEATHER, TIME], max_tokens=48, temperature=0
    )
    choice = answer.choices[0]
    assert choice.finish_reason == "tool_calls", choice
    [call] = choice.message.tool_calls
    assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {"city": "Paris"}
    assert choice.message.content is None
    content, calls, reasons = streamed(
        client.chat.completions.create(
            model=MODEL, messages=ASK, tools=[WEATHER, TIME], max_tokens=48, temperature=0, stream=True
        )
    )
    assert (content, calls, reasons) == ("", [("get_weather", call.function.arguments)], ["tool_calls"])


def test_required_and_a_history_that_replays_the_call(app, client):
    answer = client.chat.completions.create(
        model=MODEL,
        messages=ASK,
        tools=[WEATHER, TIME],
        tool_choice="required",
        parallel_tool_calls=False,
        max_tokens=48,
        temperature=0,
    )
    [call] = answer.choices[0].message.tool_calls
    assert answer.choices[0].finish_reason == "tool_calls" and call.function.name in ("get_weather", "get_time")
    json.loads(call.function.arguments)
    assert answer.model_extra["speculation"]["forced_tokens"] > 0  # the tags, the name's quotes, the keys
    result = "Sunny, 21 degrees Celsius."
    history = [
        *ASK,
        answer.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": result},
    ]
    reply = client.chat.completions.create(
        model=MODEL, messages=history, tools=[WEATHER, TIME], tool_choice="none", max_tokens=16, temperature=0
    )
    assert reply.choices[0].message.tool_calls is None and reply.choices[0].message.content  # none: text, no calls read
    as_template_sees_them = [
        *ASK,
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.function.name, "arguments": json.loads(call.function.arguments)},
                }
            ],
        },
        {"role": "tool", "content": result, "tool_call_id": call.id},
    ]
    model = app.extensions["specdraft"].target()
    prompt = model.encode_chat(as_template_sees_them, tools=[WEATHER, TIME])
    assert reply.usage.prompt_tokens == len(prompt) and "<tool_response>\nSunny, 21" in model.decode(prompt)


def test_parse_with_a_pydantic_model(client):
    messages = [{"role": "user", "content": "Extract the person: Ann Lee is 31 years old."}]
    completion = client.chat.completions.parse(
        model=MODEL, messages=messages, response_format=Person, max_tokens=32, temperature=0
    )
    assert completion.choices[0].finish_reason == "stop"
    assert completion.choices[0].message.parsed == Person(name="Ann Lee", age=31)
    speculation = completion.model_extra["speculation"]
    assert speculation["forced_tokens"] > 0 and speculation["exact"] is True

"""``POST /v1/responses`` with the real clients, on a real model (qwen2.5-coder-0.5b on llama.cpp, greedy,
the session's ``llama_server``): the ``openai`` SDK (``responses.create``, ``responses.stream``,
``responses.parse`` with a pydantic model, a function call continued through
``previous_response_id``) and LangChain's ``ChatOpenAI(use_responses_api=True)`` (a plain answer and a
tool call). Every answer is the target's own: a response's text equals the chat completion's for the
same conversation, with no drafter (plain decoding) and with the server's default drafter
(prompt lookup). Warnings are errors (pytest's settings), so the SDKs parse every answer without
one. The OpenAI Agents SDK runs in ``tests/demos/test_agents_sdk_demo.py``. Slow; answers are short."""

from __future__ import annotations

import json

import pytest
from openai import OpenAI
from pydantic import BaseModel

pytestmark = pytest.mark.slow

MODEL = "qwen2.5-coder-0.5b"
QUESTION = "Name the capital of France in one word."
TOKENS = 16
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


class City(BaseModel):
    name: str
    country: str


@pytest.fixture(scope="module")
def server(llama_server):
    return llama_server(MODEL)


@pytest.fixture(scope="module")
def client(server):
    return OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0, timeout=300)


def chat_text(client: OpenAI, messages: list[dict], **fields) -> str:
    """The chat completion's answer to ``messages``, plain decoding (no drafter)."""
    answer = client.chat.completions.create(
        model=MODEL, messages=messages, temperature=0, extra_body={"drafter": "none"}, **fields
    )
    return answer.choices[0].message.content


@pytest.fixture(scope="module")
def plain(client) -> str:
    return chat_text(client, [{"role": "user", "content": QUESTION}], max_tokens=TOKENS)


def test_create_and_stream_answer_as_chat_completions_with_and_without_speculation(client, plain):
    for drafter in ("none", "prompt-lookup"):
        response = client.responses.create(
            model=MODEL, input=QUESTION, max_output_tokens=TOKENS, temperature=0, extra_body={"drafter": drafter}
        )
        assert response.output_text == plain, drafter
        assert response.usage.output_tokens >= 1 and response.usage.total_tokens == (
            response.usage.input_tokens + response.usage.output_tokens
        )
        assert response.model_extra["speculation"]["drafter"] == drafter  # the chat completion's stats
    with client.responses.stream(model=MODEL, input=QUESTION, max_output_tokens=TOKENS, temperature=0) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert final.output_text == plain
    assert kinds[:4] == ["response.created", "response.in_progress", "response.output_item.added"] + [
        "response.content_part.added"
    ]
    assert kinds[-4:-1] == ["response.output_text.done", "response.content_part.done", "response.output_item.done"]
    assert kinds[-1] in ("response.completed", "response.incomplete")


def test_parse_gives_the_pydantic_model_the_schema_constrains(client):
    response = client.responses.parse(
        model=MODEL,
        input="Give the capital of France and its country as JSON.",
        text_format=City,
        max_output_tokens=40,
        temperature=0,
    )
    assert isinstance(response.output_parsed, City) and response.output_parsed.name
    chat = client.chat.completions.parse(
        model=MODEL,
        messages=[{"role": "user", "content": "Give the capital of France and its country as JSON."}],
        response_format=City,
        max_tokens=40,
        temperature=0,
        extra_body={"drafter": "none"},
    )
    assert response.output_text == chat.choices[0].message.content


def test_a_function_call_then_its_output_through_previous_response_id(client):
    first = client.responses.create(
        model=MODEL,
        input="What is the weather like in Paris?",
        tools=[WEATHER],
        tool_choice="required",
        max_output_tokens=48,
        temperature=0,
    )
    [call] = first.output
    assert call.type == "function_call" and call.name == "get_weather"
    assert client.responses.retrieve(first.id) == first  # GET /v1/responses/{id}: the stored object
    assert json.loads(call.arguments) == {"city": "Paris"}
    output = {"type": "function_call_output", "call_id": call.call_id, "output": "sunny, 24 degrees"}
    second = client.responses.create(
        model=MODEL,
        previous_response_id=first.id,
        input=[output],
        tools=[WEATHER],
        max_output_tokens=TOKENS,
        temperature=0,
        extra_body={"drafter": "none"},
    )
    history = [
        {"role": "user", "content": "What is the weather like in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call.call_id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
            ],
        },
        {"role": "tool", "tool_call_id": call.call_id, "content": "sunny, 24 degrees"},
    ]
    chat = client.chat.completions.create(
        model=MODEL,
        messages=history,
        tools=[{"type": "function", "function": {k: v for k, v in WEATHER.items() if k != "type"}}],
        max_tokens=TOKENS,
        temperature=0,
        extra_body={"drafter": "none"},
    )
    message = chat.choices[0].message
    assert second.output_text == (message.content or "")
    assert [item.name for item in second.output if item.type == "function_call"] == [
        c.function.name for c in message.tool_calls or ()
    ]


def test_langchain_chat_openai_with_the_responses_api(server, plain):
    from langchain_openai import ChatOpenAI

    def llm(max_tokens: int) -> ChatOpenAI:
        return ChatOpenAI(
            base_url=server.url + "/v1",
            api_key="x",
            model=MODEL,
            temperature=0,
            max_tokens=max_tokens,
            use_responses_api=True,
            max_retries=0,
        )

    assert llm(TOKENS).invoke(QUESTION).text == plain
    tool = {"type": "function", "function": {k: v for k, v in WEATHER.items() if k != "type"}}  # LangChain's form
    with_tool = llm(48).bind_tools([tool], tool_choice="required").invoke("What is the weather like in Paris?")
    [call] = with_tool.tool_calls
    assert call["name"] == "get_weather" and call["args"] == {"city": "Paris"}

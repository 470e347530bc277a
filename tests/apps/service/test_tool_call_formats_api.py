"""The service writes and reads tool calls in the served model's format, chosen from its chat template:
a tiny model whose template is Mistral's or Llama 3.2's (``tests/core/tool_calls/templates``, the tags
special tokens of its vocabulary) answers tool_choice required or a named function with calls in that
family's grammar, read back by that family's parser, streamed and not.

Every answer is the target's own: its calls are those of plain constrained decoding under the
family's grammar (``SpeculativeGenerator.generate`` with no drafter), read by the family's ``parse``.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from test_service_api import MESSAGES, greedy
from tiny_models import make_tiny_model
from tiny_service import SERVED, make_app

from specdraft.tool_calls import LLAMA3, MISTRAL, ToolChoice, format_for_model, tools_from_openai

TEMPLATES = Path(__file__).parents[2] / "core" / "tool_calls" / "templates"
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"enum": ["Paris", "Rome"]}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}
TIME = {"type": "function", "function": {"name": "get_time"}}
TOOLS = [WEATHER, TIME]
CALL_TOKENS = 80
FAMILIES = {MISTRAL: "mistral.jinja", LLAMA3: "llama3.2.jinja"}


@pytest.fixture(scope="module", params=list(FAMILIES), ids=lambda fmt: fmt.name)
def served(request, tokenizer):
    """(format, model, test client): a tiny model with the family's template and tags as special tokens."""
    chat_tokenizer = copy.deepcopy(tokenizer)
    chat_tokenizer.add_special_tokens({"additional_special_tokens": ["[TOOL_CALLS]", "<|python_tag|>"]})
    chat_tokenizer.chat_template = (TEMPLATES / FAMILIES[request.param]).read_text()
    model = make_tiny_model(chat_tokenizer, seed=0)
    model.hf_model.config.max_position_embeddings = 1024  # Llama's tools section is long in the tiny vocabulary
    assert format_for_model(model) is request.param
    return request.param, model, make_app(model).test_client()


def ask(client, **body):
    body = {"model": SERVED, "messages": MESSAGES, "tools": TOOLS, "max_tokens": CALL_TOKENS, **body}
    response = client.post("/v1/chat/completions", json=body)
    assert response.status_code == 200, response.get_data(as_text=True)
    return response


def streamed(response) -> tuple[str, list[dict], list[str]]:
    """Content, calls (id, name, arguments) and finish reasons of an event stream; a call's id and
    name come once, in its first delta."""
    content, calls, reasons = "", [], []
    for line in response.get_data(as_text=True).splitlines():
        if not line.startswith("data: {"):
            continue
        for choice in json.loads(line[len("data: ") :])["choices"]:
            delta = choice["delta"]
            content += delta.get("content") or ""
            for entry in delta.get("tool_calls") or []:
                if entry["index"] == len(calls):
                    calls.append({"id": entry["id"], **entry["function"]})
                else:
                    assert "id" not in entry and "name" not in entry["function"]
                    calls[entry["index"]]["arguments"] += entry["function"]["arguments"]
            if choice["finish_reason"]:
                reasons.append(choice["finish_reason"])
    return content, calls, reasons


@pytest.mark.parametrize(
    "tool_choice, choice, finish_reason",
    [
        ({"type": "function", "function": {"name": "get_weather"}}, ToolChoice("function", "get_weather"), "stop"),
        ("required", ToolChoice("required"), "tool_calls"),
    ],
)
def test_constrained_calls_are_the_family_s_streamed_and_not(served, tool_choice, choice, finish_reason):
    fmt, model, client = served
    constraint = fmt.constraint(tools_from_openai(TOOLS), choice, True, model.tokenizer)
    expected = greedy(model, model.encode_chat(MESSAGES, tools=TOOLS), CALL_TOKENS, constraint=constraint)
    assert expected.finish_reason == "stop"
    calls = [(call.name, call.arguments) for call in fmt.parse(expected.text).calls]
    assert calls and all(name in ("get_weather", "get_time") for name, _ in calls)
    id_form = r"[A-Za-z0-9]{9}" if fmt is MISTRAL else r"call_[0-9a-f]{24}"

    choice_ = ask(client, tool_choice=tool_choice).get_json()["choices"][0]
    made = choice_["message"]["tool_calls"]
    assert [(c["function"]["name"], c["function"]["arguments"]) for c in made] == calls
    assert all(re.fullmatch(id_form, c["id"]) and c["type"] == "function" for c in made)
    assert choice_["message"]["content"] is None and choice_["finish_reason"] == finish_reason

    content, deltas, reasons = streamed(ask(client, tool_choice=tool_choice, stream=True))
    assert content == "" and [(c["name"], c["arguments"]) for c in deltas] == calls and reasons == [finish_reason]
    assert all(re.fullmatch(id_form, c["id"]) for c in deltas)

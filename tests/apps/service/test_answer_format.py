"""How a chat answer's text is spelled (``answer_format``): the assistant message and the streamed
deltas, with tool calls read from the text, on fixed replies (no model)."""

import json

import pytest

from specdraft.apps.service.answer_format import CHAT, TEXT
from specdraft.apps.service.structured_output import OutputPlan
from specdraft.tool_calls import ToolChoice, ToolSpec, format_tool_call

AUTO, REQUIRED, NAMED = ToolChoice("auto"), ToolChoice("required"), ToolChoice("function", "get_weather")
PARIS, ROME = '{"city": "Paris"}', '{"city": "Rome", "days": [1, 2]}'
TWO_CALLS = format_tool_call("get_weather", PARIS) + "\n" + format_tool_call("get_weather", ROME)


def streamed(text: str, plan: OutputPlan, size: int) -> list[dict]:
    """The deltas of ``text`` pushed ``size`` characters at a time, then the final one."""
    deltas = CHAT.deltas(plan)
    pieces = [delta for i in range(0, len(text), size) for delta in deltas.push(text[i : i + size])]
    return [*pieces, *deltas.finish(), deltas.final()], deltas.calls


def joined(deltas: list[dict]) -> tuple[str, list[dict]]:
    """The content and the calls a client (the openai SDK's accumulation) makes of ``deltas``."""
    content, calls = "", []
    for body in deltas:
        delta = body["delta"]
        content += delta.get("content", "")
        for entry in delta.get("tool_calls", []):
            if entry["index"] == len(calls):
                assert set(entry) == {"index", "id", "type", "function"} and entry["type"] == "function"
                calls.append(
                    {"id": entry["id"], "name": entry["function"]["name"], "arguments": entry["function"]["arguments"]}
                )
            else:
                assert set(entry) == {"index", "function"} and set(entry["function"]) == {"arguments"}, entry
                calls[entry["index"]]["arguments"] += entry["function"]["arguments"]
    return content, calls


def test_plain_text_is_the_content_as_it_is():
    fields, calls = CHAT.choice(" Hello <tool_call> x", OutputPlan())
    assert (
        fields == {"message": {"role": "assistant", "content": " Hello <tool_call> x", "refusal": None}} and calls == 0
    )
    deltas, calls = streamed("Hello", OutputPlan(), 2)
    assert deltas == [
        {"delta": {"role": "assistant", "content": "He"}},
        {"delta": {"content": "ll"}},
        {"delta": {"content": "o"}},
        {"delta": {}},
    ]
    assert TEXT.choice("abc", OutputPlan()) == ({"text": "abc"}, 0)


@pytest.mark.parametrize("choice", [AUTO, REQUIRED])
@pytest.mark.parametrize("size", [1, 3, 7, 1000])
def test_calls_stream_as_index_id_and_name_once_then_argument_fragments(choice, size):
    plan = OutputPlan(choice=choice)
    fields, count = CHAT.choice(TWO_CALLS, plan)
    message = fields["message"]
    assert message["content"] is None and message["refusal"] is None and count == 2
    assert [(c["type"], c["function"]["name"], c["function"]["arguments"]) for c in message["tool_calls"]] == [
        ("function", "get_weather", PARIS),
        ("function", "get_weather", ROME),
    ]
    assert all(c["id"].startswith("call_") for c in message["tool_calls"])
    deltas, calls = streamed(TWO_CALLS, plan, size)
    assert calls == 2 and deltas[0]["delta"]["role"] == "assistant" and deltas[-1] == {"delta": {}}
    content, made = joined(deltas)
    assert content == "" and [(c["name"], c["arguments"]) for c in made] == [
        ("get_weather", PARIS),
        ("get_weather", ROME),
    ]
    assert all(json.loads(c["arguments"]) for c in made)


@pytest.mark.parametrize("size", [7, 1000])
def test_a_chunk_holds_one_entry_per_call(size):
    """OpenAI sends one ``delta.tool_calls`` entry per call per chunk; LangChain builds a call named ''
    from a second entry of the same index (langchain-tests' test_structured_output_pydantic_2_v1)."""
    deltas, _ = streamed(TWO_CALLS, OutputPlan(choice=REQUIRED), size)
    for body in deltas:
        indices = [entry["index"] for entry in body["delta"].get("tool_calls", [])]
        assert len(indices) == len(set(indices)), body


@pytest.mark.parametrize("size", [1, 2, 5])
def test_content_before_a_call_never_shows_a_partial_tag(size):
    text = "Let me look. " + format_tool_call("get_weather", PARIS)
    plan = OutputPlan(choice=AUTO)
    deltas, calls = streamed(text, plan, size)
    content, made = joined(deltas)
    assert content == "Let me look." and calls == 1 and made[0]["arguments"] == PARIS
    assert not any("<" in body["delta"].get("content", "") for body in deltas)
    fields, _ = CHAT.choice(text, plan)
    assert fields["message"]["content"] == "Let me look."


def test_a_reply_without_calls_in_auto_mode_is_content():
    fields, calls = CHAT.choice("  It is sunny. ", OutputPlan(choice=AUTO))
    assert fields["message"] == {"role": "assistant", "content": "It is sunny.", "refusal": None} and calls == 0
    fields, _ = CHAT.choice("", OutputPlan(choice=AUTO))
    assert fields["message"]["content"] == ""


def test_parallel_tool_calls_false_keeps_the_first_call():
    plan = OutputPlan(choice=AUTO, parallel=False)
    fields, calls = CHAT.choice(TWO_CALLS, plan)
    assert calls == 1 and [c["function"]["arguments"] for c in fields["message"]["tool_calls"]] == [PARIS]
    deltas, calls = streamed(TWO_CALLS, plan, 4)
    assert calls == 1 and [c["arguments"] for c in joined(deltas)[1]] == [PARIS]


def test_a_named_call_and_a_call_cut_short():
    fields, calls = CHAT.choice(format_tool_call("get_weather", PARIS), OutputPlan(choice=NAMED))
    assert calls == 1 and OutputPlan(choice=NAMED).finish_reason("stop", calls) == "stop"
    cut = format_tool_call("get_weather", PARIS)[:-20]  # max_tokens ended it inside the arguments
    fields, calls = CHAT.choice(cut, OutputPlan(choice=REQUIRED))
    assert calls == 1 and fields["message"]["tool_calls"][0]["function"]["arguments"] == '{"city": "P'
    assert OutputPlan(choice=REQUIRED).finish_reason("length", calls) == "length"


WEATHER_SPEC = ToolSpec("get_weather")
BARE = '```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```'


@pytest.mark.parametrize("size", [1, 5, 1000])
def test_auto_mode_reads_an_untagged_call_of_the_requests_tools(size):
    plan = OutputPlan(tools=(WEATHER_SPEC,), choice=AUTO)
    fields, count = CHAT.choice(BARE, plan)
    [call] = fields["message"]["tool_calls"]
    assert count == 1 and fields["message"]["content"] is None
    assert call["function"] == {"name": "get_weather", "arguments": PARIS}
    deltas, calls = streamed(BARE, plan, size)
    content, streamed_calls = joined(deltas)
    assert (
        calls == 1
        and content == ""
        and [(c["name"], c["arguments"]) for c in streamed_calls] == [("get_weather", PARIS)]
    )


@pytest.mark.parametrize(
    "plan", [OutputPlan(tools=(WEATHER_SPEC,), choice=REQUIRED), OutputPlan(tools=(ToolSpec("get_time"),), choice=AUTO)]
)
def test_an_untagged_call_is_content_outside_auto_mode_or_of_another_tool(plan):
    fields, count = CHAT.choice(BARE, plan)
    assert count == 0 and fields["message"]["content"] == BARE and "tool_calls" not in fields["message"]

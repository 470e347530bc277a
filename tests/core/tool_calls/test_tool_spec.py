"""specdraft.tool_calls' tools and tool choice as a request gives them (``tools_from_openai``,
``ToolSpec``, ``ToolChoice.from_openai``): a valid one reads back as given, an invalid one is a
``ToolError`` whose message says what and where."""

from __future__ import annotations

import pytest
from tool_call_fixtures import TIME, WEATHER

from specdraft.tool_calls import ToolChoice, ToolError, ToolSpec, tools_from_openai


def tool(**function):
    return {"type": "function", "function": {"name": "f", **function}}


@pytest.mark.parametrize(
    "tools, message",
    [
        ("get_weather", "tools must be a list, got a string"),
        ([WEATHER, "x"], "tools[1] must be an object, got a string"),
        ([{"type": "retrieval", "function": {"name": "f"}}], "tools[0].type must be \"function\", got 'retrieval'"),
        ([{"type": "function"}], "tools[0].function must be an object, got null"),
        (
            [WEATHER, tool(name="get weather")],
            "tools[1].function.name must be letters, digits, underscores and dashes, 1 to 64 of them, "
            "got 'get weather'",
        ),
        ([tool(name="x" * 65)], "tools[0].function.name must be letters, digits"),
        ([tool(name="")], "tools[0].function.name must be"),
        (
            [{"type": "function", "function": {"description": "no name"}}],
            "tools[0].function.name must be letters, digits, underscores and dashes, 1 to 64 of them, got None",
        ),
        ([tool(description=3)], "tools[0].function.description must be a string, got a number"),
        ([tool(strict="yes")], "tools[0].function.strict must be true or false, got 'yes'"),
        ([tool(parameters=[])], "tools[0].function.parameters must be a JSON schema object, got a list"),
        ([tool(parameters={"type": "string"})], 'tools[0].function.parameters.type must be "object"'),
        (
            [TIME, tool(parameters={"type": "object", "properties": {"age": {"type": "integr"}}})],
            "tools[1].function.parameters: invalid schema at /properties/age/type",
        ),
        ([WEATHER, WEATHER], "tools[1].function.name 'get_weather' repeats tools[0]'s"),
    ],
)
def test_invalid_tools_say_what_and_where(tools, message):
    with pytest.raises(ToolError) as error:
        tools_from_openai(tools)
    assert str(error.value).startswith(message)
    assert isinstance(error.value, ValueError)


def test_a_valid_tool_reads_back_as_given():
    weather, time = tools_from_openai([WEATHER, TIME])
    assert weather == ToolSpec("get_weather", "The weather in a city", WEATHER["function"]["parameters"], None)
    assert weather.to_openai() == WEATHER and time.to_openai() == TIME
    assert time.arguments_schema() == {"type": "object", "properties": {}, "additionalProperties": False}
    open_ended = ToolSpec("f", parameters={"type": "object", "properties": {"a": {"type": "object"}}})
    assert open_ended.arguments_schema() == {"additionalProperties": False, **open_ended.parameters}
    assert (
        ToolSpec("f", parameters={"type": "object", "additionalProperties": True}).arguments_schema()[
            "additionalProperties"
        ]
        is True
    )


@pytest.mark.parametrize(
    "choice, tools, want",
    [
        (None, [WEATHER], ToolChoice("auto")),
        (None, [], ToolChoice("none")),
        ("none", [WEATHER], ToolChoice("none")),
        ("required", [WEATHER], ToolChoice("required")),
        ({"type": "function", "function": {"name": "get_time"}}, [WEATHER, TIME], ToolChoice("function", "get_time")),
    ],
)
def test_tool_choice(choice, tools, want):
    got = ToolChoice.from_openai(choice, tools_from_openai(tools))
    assert got == want
    assert got.constrained == (want.mode in ("required", "function"))


@pytest.mark.parametrize(
    "choice, tools, message",
    [
        ("required", [], 'tool_choice is "required" but the request gives no tools'),
        (
            {"type": "function", "function": {"name": "get_time"}},
            [WEATHER],
            "tool_choice.function.name 'get_time' is not one of the request's tools (get_weather)",
        ),
        ("always", [WEATHER], 'tool_choice must be "none", "auto", "required" or'),
        ({"type": "function"}, [WEATHER], 'tool_choice must be "none", "auto", "required" or'),
    ],
)
def test_invalid_tool_choice_says_what(choice, tools, message):
    with pytest.raises(ToolError) as error:
        ToolChoice.from_openai(choice, tools_from_openai(tools))
    assert str(error.value).startswith(message)

"""``response_format``, ``tools``, ``tool_choice`` and tool-call histories as clients send them
(``protocol.structured``, ``protocol.chat``), and what a request's answer must be
(``structured_output.plan_output``): validated without a model (the tiny tokenizer for the plan)."""

import json

import pytest

from specdraft.apps.service.config import ServiceConfig
from specdraft.apps.service.protocol.chat import ChatMessage, HistoryCall
from specdraft.apps.service.protocol.completions import parse_completion_request
from specdraft.apps.service.protocol.errors import RequestError
from specdraft.apps.service.structured_output import OutputPlan, ToolRequest, plan_output
from specdraft.constrained import ConstraintLimits
from specdraft.tool_calls import ToolChoice

CONFIG = ServiceConfig(model="tiny", max_tokens_limit=100, default_max_tokens=16)
USER = {"role": "user", "content": "What is the weather in Paris?"}
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "the weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
TIME = {"type": "function", "function": {"name": "get_time"}}
CALL = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
HISTORY = [
    USER,
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": [{"type": "text", "text": "18 C,"}, {"type": "text", "text": "sunny"}],
    },
]
PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}


def chat(**fields):
    return parse_completion_request({"messages": [USER], **fields}, chat=True, config=CONFIG)


def rejected(body, chat_endpoint=True):
    with pytest.raises(RequestError) as caught:
        parse_completion_request(
            {**({"messages": [USER]} if chat_endpoint else {"prompt": "hi"}), **body}, chat=chat_endpoint, config=CONFIG
        )
    return caught.value


class TinyTokenizer:
    """What ``plan_output`` reads of a tokenizer: ``encode`` (whether the tool-call tags are tokens)."""

    def __init__(self, tokenizer):
        self.encode = tokenizer.encode


def plan(tokenizer, body, limits=ConstraintLimits()) -> OutputPlan:
    req = chat(**body)
    return plan_output(req.response_format, req.tools, TinyTokenizer(tokenizer), limits)


# --- accepted shapes ------------------------------------------------------------------------------
def test_tools_and_choices_reach_the_request():
    assert chat().tools is None and chat().response_format is None
    req = chat(
        tools=[WEATHER, TIME],
        tool_choice={"type": "function", "function": {"name": "get_time"}},
        parallel_tool_calls=False,
    )
    assert req.tools == ToolRequest(
        (WEATHER, TIME), {"type": "function", "function": {"name": "get_time"}}, parallel=False
    )
    assert chat(tools=[WEATHER]).tools == ToolRequest((WEATHER,), None, parallel=True)
    assert chat(tool_choice="none").tools == ToolRequest((), "none")


@pytest.mark.parametrize(
    "response_format",
    [
        {"type": "text"},
        {"type": "json_object"},
        {"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON, "strict": True}},
        {
            "type": "json_schema",
            "json_schema": {"name": "person", "schema": PERSON, "strict": False, "description": "a person"},
        },
        {"type": "json_schema", "json_schema": {"name": "anything"}},
    ],
)
def test_response_formats_are_kept_in_openais_shape(response_format):
    assert chat(response_format=response_format).response_format == response_format
    assert (
        parse_completion_request(
            {"prompt": "hi", "response_format": response_format}, chat=False, config=CONFIG
        ).response_format
        == response_format
    )


def test_a_history_of_calls_and_results_reaches_the_template_with_arguments_as_objects():
    req = parse_completion_request({"messages": HISTORY}, chat=True, config=CONFIG)
    assert req.messages == (
        ChatMessage("user", USER["content"]),
        ChatMessage("assistant", "", (HistoryCall("call_1", "get_weather", '{"city": "Paris"}'),)),
        ChatMessage("tool", "18 C,\nsunny", tool_call_id="call_1"),
    )
    assert [m.to_dict() for m in req.messages][1:] == [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
                }
            ],
        },
        {"role": "tool", "content": "18 C,\nsunny", "tool_call_id": "call_1"},
    ]


# --- refused with a 400 naming the field ----------------------------------------------------------
@pytest.mark.parametrize(
    ("body", "param", "words"),
    [
        (
            {"tools": [{"type": "function", "function": {"name": "get weather"}}]},
            "tools[0].function.name",
            "1-64 letters, digits",
        ),
        ({"tools": [{"type": "function", "function": {"name": "x" * 65}}]}, "tools[0].function.name", "1-64 letters"),
        ({"tools": [{"type": "code_interpreter"}]}, "tools[0].type", '"function" (the only tools served)'),
        ({"tools": [{"type": "function"}]}, "tools[0].function", "is required"),
        (
            {"tools": [{"type": "function", "function": {"name": "f", "parameters": "x"}}]},
            "tools[0].function.parameters",
            "must be an object",
        ),
        ({"tools": [WEATHER, WEATHER]}, "tools[1].function.name", "must be unique"),
        ({"tools": "get_weather"}, "tools", "must be a list"),
        (
            {"tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "get_time"}}},
            "tool_choice.function.name",
            "not in tools",
        ),
        ({"tool_choice": {"type": "function", "function": {"name": "get_time"}}}, "tool_choice", "has no tools"),
        ({"tool_choice": "required"}, "tool_choice", "needs tools"),
        ({"tools": [], "tool_choice": "required"}, "tool_choice", "needs tools"),
        ({"tools": [WEATHER], "tool_choice": "any"}, "tool_choice", "one of none, auto, required or a named function"),
        ({"tools": [WEATHER], "tool_choice": {"type": "function"}}, "tool_choice.function", 'must be {"name"'),
        ({"tools": [WEATHER], "parallel_tool_calls": "yes"}, "parallel_tool_calls", "must be true or false"),
        ({"response_format": {"type": "xml"}}, "response_format.type", "one of text, json_object, json_schema"),
        ({"response_format": "json"}, "response_format", "must be an object"),
        ({"response_format": {"type": "json_schema"}}, "response_format.json_schema", "is required"),
        (
            {"response_format": {"type": "json_schema", "json_schema": {"schema": PERSON}}},
            "response_format.json_schema.name",
            "is required",
        ),
        (
            {"response_format": {"type": "json_schema", "json_schema": {"name": "a b", "schema": PERSON}}},
            "response_format.json_schema.name",
            "1-64",
        ),
        (
            {"response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": [1]}}},
            "response_format.json_schema.schema",
            "must be an object",
        ),
    ],
)
def test_bad_tools_and_formats_are_named(body, param, words):
    error = rejected(body)
    assert error.param == param and words in error.message, (error.param, error.message)


@pytest.mark.parametrize(
    ("messages", "param", "words"),
    [
        (
            [USER, {"role": "tool", "tool_call_id": "call_9", "content": "18 C"}],
            "messages[1].tool_call_id",
            "answers no earlier tool call",
        ),
        (
            [*HISTORY, {"role": "tool", "tool_call_id": "call_2", "content": "x"}],
            "messages[3].tool_call_id",
            "the earlier calls are 'call_1'",
        ),
        (
            [{"role": "tool", "tool_call_id": "call_1", "content": "x"}, *HISTORY],
            "messages[0].tool_call_id",
            "answers no earlier tool call",
        ),
        ([USER, {"role": "tool", "content": "18 C"}], "messages[1].tool_call_id", "is required"),
        ([USER, {"role": "tool", "tool_call_id": "call_1"}], "messages[1].content", "must be a string, got null"),
        ([{**USER, "tool_calls": [CALL]}], "messages[0].tool_calls", "only assistant messages make tool calls"),
        (
            [
                USER,
                {"role": "assistant", "tool_calls": [{**CALL, "function": {"name": "f", "arguments": "city=Paris"}}]},
            ],
            "messages[1].tool_calls[0].function.arguments",
            "must be the text of a JSON object",
        ),
        (
            [USER, {"role": "assistant", "tool_calls": [{**CALL, "function": {"name": "f", "arguments": "[1]"}}]}],
            "messages[1].tool_calls[0].function.arguments",
            "JSON object",
        ),
        (
            [USER, {"role": "assistant", "tool_calls": [{"id": "c", "type": "function"}]}],
            "messages[1].tool_calls[0].function",
            "is required",
        ),
    ],
)
def test_bad_histories_are_named(messages, param, words):
    error = rejected({"messages": messages})
    assert error.param == param and words in error.message, (error.param, error.message)


@pytest.mark.parametrize(("field", "value"), [("tools", [WEATHER]), ("tool_choice", "required")])
def test_tools_are_for_the_chat_endpoint(field, value):
    error = rejected({field: value}, chat_endpoint=False)
    assert error.param == field and "for /v1/chat/completions" in error.message


# --- the plan: constraint, tools in the prompt, how calls are read --------------------------------
def test_plans(tokenizer):
    assert plan(tokenizer, {}) == OutputPlan()
    json_mode = plan(tokenizer, {"response_format": {"type": "json_object"}})
    assert json_mode.constraint.kind == "json_object" and not json_mode.reads_calls
    schema = plan(
        tokenizer, {"response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": PERSON}}}
    )
    assert schema.constraint.schema == PERSON
    auto = plan(tokenizer, {"tools": [WEATHER]})
    assert auto.constraint is None and auto.choice == ToolChoice("auto") and auto.reads_calls
    assert auto.template_tools == [WEATHER]
    none = plan(tokenizer, {"tools": [WEATHER], "tool_choice": "none", "response_format": {"type": "json_object"}})
    assert none.template_tools == [WEATHER] and not none.reads_calls and none.constraint.kind == "json_object"
    required = plan(tokenizer, {"tools": [WEATHER, TIME], "tool_choice": "required"})
    assert required.constraint.kind == "lark" and "get_time" in required.constraint.source and required.parallel
    named = plan(
        tokenizer, {"tools": [WEATHER, TIME], "tool_choice": {"type": "function", "function": {"name": "get_time"}}}
    )
    assert named.choice == ToolChoice("function", "get_time") and "get_weather" not in named.constraint.source
    # finish reasons as OpenAI gives them
    assert [auto.finish_reason("stop", 1), required.finish_reason("stop", 2), named.finish_reason("stop", 1)] == [
        "tool_calls",
        "tool_calls",
        "stop",
    ]
    assert [
        auto.finish_reason("stop", 0),
        named.finish_reason("length", 1),
        OutputPlan().finish_reason("length", 0),
    ] == ["stop", "length", "length"]


@pytest.mark.parametrize(
    ("body", "limits", "param", "words"),
    [
        (
            {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "p", "schema": {"type": "object", "properties": {"age": {"type": "int"}}}},
                }
            },
            ConstraintLimits(),
            "response_format.json_schema.schema",
            "/properties/age/type",
        ),
        (
            {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "p", "schema": {"type": "string", "pattern": "(?=a)a"}},
                }
            },
            ConstraintLimits(),
            "response_format.json_schema.schema",
            "look-around",
        ),
        (
            {"response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": PERSON}}},
            ConstraintLimits(max_source_bytes=50),
            "response_format.json_schema.schema",
            "at most 50 are allowed",
        ),
        (
            {"response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": PERSON}}},
            ConstraintLimits(max_depth=2),
            "response_format.json_schema.schema",
            "at most 2 are allowed",
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
            ConstraintLimits(),
            "tools[0].function.parameters",
            "/properties/a/type",
        ),
        (
            {"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "array"}}}]},
            ConstraintLimits(),
            "tools[0].function.parameters.type",
            'must be "object"',
        ),
        (
            {"tools": [WEATHER], "response_format": {"type": "json_object"}},
            ConstraintLimits(),
            "response_format",
            "tool calls in auto mode",
        ),
    ],
)
def test_schemas_the_grammar_cannot_follow_are_named(tokenizer, body, limits, param, words):
    with pytest.raises(RequestError) as caught:
        plan(tokenizer, body, limits)
    assert caught.value.param == param and words in caught.value.message, (caught.value.param, caught.value.message)
    json.dumps(caught.value.message)

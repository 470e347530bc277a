"""specdraft.tool_calls: the Qwen2.5 / Hermes tool-call format. Parsing a reply, streaming it one
character at a time (never a partial ``<tool_call`` as content, and the same answer as parsing it
whole), validation messages that say where, the grammar's text, and (slow) the grammar compiled on
qwen2.5-coder-0.5b's vocabulary on both backends, accepting a right call and refusing wrong ones."""

from __future__ import annotations

import itertools
import json
import re

import pytest

from specdraft.tool_calls import (
    TOOL_CALL_OPEN,
    ContentDelta,
    ToolCallDelta,
    ToolCallStream,
    ToolChoice,
    ToolError,
    ToolSpec,
    format_tool_call,
    new_call_id,
    parse_tool_calls,
    tags_are_tokens,
    tool_call_constraint,
    tools_from_openai,
)

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city", "days"],
            "additionalProperties": False,
        },
    },
}
TIME = {"type": "function", "function": {"name": "get_time"}}
SEARCH = {
    "type": "function",
    "function": {"name": "search", "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}},
}
CALL = format_tool_call("get_weather", '{"city": "Paris", "days": 2}')
TRICKY_ARGUMENTS = '{"city": "Pa}ri<tool_call>s \\"x\\"", "n": [1, {"a": "]"}]}'

# (reply, content, [(name, arguments)])
REPLIES = [
    ("Hello there.", "Hello there.", []),
    ("", None, []),
    (CALL, None, [("get_weather", '{"city": "Paris", "days": 2}')]),
    (f"Let me look.\n{CALL}\n", "Let me look.", [("get_weather", '{"city": "Paris", "days": 2}')]),
    (
        f"{CALL}\n{format_tool_call('get_time', '{}')}",
        None,
        [("get_weather", '{"city": "Paris", "days": 2}'), ("get_time", "{}")],
    ),
    (f"A\n{CALL}\nB", "A\n\nB", [("get_weather", '{"city": "Paris", "days": 2}')]),
    (format_tool_call("f", TRICKY_ARGUMENTS), None, [("f", TRICKY_ARGUMENTS)]),
    ('<tool_call>{ "name" :"f",\n"arguments": {"a":1} }</tool_call>', None, [("f", '{"a":1}')]),
    # not the header's order: read whole, arguments re-serialised
    ('<tool_call>\n{"arguments": {"a":1}, "name": "g"}\n</tool_call> done', "done", [("g", '{"a": 1}')]),
    # malformed blocks stay content, tags included
    ("<tool_call>\nnot json\n</tool_call> hi", "<tool_call>\nnot json\n</tool_call> hi", []),
    (
        '<tool_call>\n{"name": 3, "arguments": {}}\n</tool_call>',
        '<tool_call>\n{"name": 3, "arguments": {}}\n</tool_call>',
        [],
    ),
    ('x <tool_call>\n{"name": "f", "arg', "x", []),  # cut short while writing a call: no call, no content
    ('x <tool_call>\n"f", {"a', 'x <tool_call>\n"f", {"a', []),  # malformed and never closed: content
    ("a < b and a <tool", "a < b and a <tool", []),
    ("1 </tool_call> 2", "1 </tool_call> 2", []),
]


def ids():
    counter = itertools.count()
    return lambda: f"call_{next(counter):024x}"


def calls_of(reply):
    return [(call.name, call.arguments) for call in reply.calls]


@pytest.mark.parametrize("text, content, calls", REPLIES)
def test_parse_tool_calls(text, content, calls):
    reply = parse_tool_calls(text)
    assert reply.content == content
    assert calls_of(reply) == calls


def test_call_ids_are_openai_style_and_distinct():
    reply = parse_tool_calls(f"{CALL}\n{CALL}")
    assert all(re.fullmatch(r"call_[0-9a-f]{24}", call.id) for call in reply.calls)
    assert len({call.id for call in reply.calls}) == 2
    assert re.fullmatch(r"call_[0-9a-f]{24}", new_call_id())


def test_a_call_as_openai_gives_it():
    (call,) = parse_tool_calls(CALL, ids()).calls
    assert call.to_openai() == {
        "id": "call_" + "0" * 24,
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris", "days": 2}'},
    }
    assert json.loads(call.arguments) == {"city": "Paris", "days": 2}


def stream_one_char_at_a_time(text, tool_names=None):
    stream = ToolCallStream(ids(), tool_names)
    events = []
    for char in text:
        events.extend(stream.push(char))
    return events + stream.finish()


def replay(events):
    """The content and the calls the events add up to, checking each call's id and name come once."""
    content, calls = "", []
    for event in events:
        if isinstance(event, ContentDelta):
            content += event.text
        else:
            assert isinstance(event, ToolCallDelta)
            if event.id is None:
                assert event.name is None and event.index == len(calls) - 1
                calls[event.index][1] += event.arguments
            else:
                assert event.index == len(calls) and event.name and event.arguments == ""
                calls.append([event.name, ""])
    return content or None, [tuple(call) for call in calls]


@pytest.mark.parametrize("text, content, calls", REPLIES)
def test_streaming_one_character_at_a_time_gives_the_parse(text, content, calls):
    assert replay(stream_one_char_at_a_time(text)) == (content, calls)


NAMES = ("get_weather", "get_time")
BARE = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
PARIS = ("get_weather", '{"city": "Paris"}')
# replies without <tool_call> tags, read with the request's tool names: (reply, content, [(name, arguments)])
UNTAGGED = [
    (BARE, None, [PARIS]),
    (f"\n  {BARE}\n", None, [PARIS]),
    (f"```json\n{BARE}\n```", None, [PARIS]),
    (f"```\n{BARE}\n```\n", None, [PARIS]),
    (f"```json\n{BARE}\n", None, [PARIS]),  # ended inside its fence
    (f'{BARE}\n{{"name": "get_time", "arguments": {{}}}}', None, [PARIS, ("get_time", "{}")]),
    (
        f'[{BARE}, {{"name": "get_time", "parameters": {{"city": "Oslo"}}}}]',
        None,
        [PARIS, ("get_time", '{"city": "Oslo"}')],
    ),
    (
        '{"name":"get_weather","arguments":{"city":"Pa}ri\\"s","n":[1,{"a":"]"}]}}',
        None,
        [("get_weather", '{"city": "Pa}ri\\"s", "n": [1, {"a": "]"}]}')],
    ),
    # not calls: content exactly as without the names
    ('{"name": "get_stock", "arguments": {"s": 1}}', '{"name": "get_stock", "arguments": {"s": 1}}', []),
    (f"Here you go: {BARE}", f"Here you go: {BARE}", []),
    (f"{BARE} Done.", f"{BARE} Done.", []),
    (f"{BARE}\n```", f"{BARE}\n```", []),  # a closing fence never opened
    (f"```python\n{BARE}\n```", f"```python\n{BARE}\n```", []),
    (
        '{"name": "get_weather", "arguments": {"city": "Paris"}, "extra": 1}',
        '{"name": "get_weather", "arguments": {"city": "Paris"}, "extra": 1}',
        [],
    ),
    ('{"name": "get_weather", "arguments": "Paris"}', '{"name": "get_weather", "arguments": "Paris"}', []),
    ('{"city": "Paris"}', '{"city": "Paris"}', []),
    (
        '{"name": "get_weather", "arguments": {"city": "Par',
        '{"name": "get_weather", "arguments": {"city": "Par',
        [],
    ),  # cut short
    ("```json\n", "```json", []),
    ("Hello.", "Hello.", []),
    (f"{CALL}\n", None, [("get_weather", '{"city": "Paris", "days": 2}')]),  # tagged, as ever
]


@pytest.mark.parametrize("text, content, calls", UNTAGGED)
def test_untagged_calls_are_read_with_the_tool_names(text, content, calls):
    reply = parse_tool_calls(text, tool_names=NAMES)
    assert (reply.content, calls_of(reply)) == (content, calls)
    assert replay(stream_one_char_at_a_time(text, NAMES)) == (content, calls)


@pytest.mark.parametrize("text, content, calls", UNTAGGED)
def test_without_tool_names_untagged_calls_stay_content(text, content, calls):
    if calls and TOOL_CALL_OPEN not in text:
        assert calls_of(parse_tool_calls(text)) == []
        assert parse_tool_calls(text).content == text.strip()


@pytest.mark.parametrize("text, content, calls", REPLIES)
def test_tool_names_change_nothing_for_tagged_replies(text, content, calls):
    reply = parse_tool_calls(text, tool_names=NAMES)
    assert (reply.content, calls_of(reply)) == (content, calls)
    assert replay(stream_one_char_at_a_time(text, NAMES)) == (content, calls)


@pytest.mark.parametrize("text, content, calls", UNTAGGED)
def test_held_back_text_never_shows_part_of_an_untagged_call(text, content, calls):
    stream, events = ToolCallStream(ids(), NAMES), []
    for end in range(len(text)):
        events.extend(stream.push(text[end]))
        if content is None:
            assert not any(isinstance(event, ContentDelta) for event in events), text[: end + 1]
    assert replay(events + stream.finish()) == (content, calls)


def test_text_that_cannot_be_an_untagged_call_is_released_at_once():
    stream = ToolCallStream(ids(), NAMES)
    assert stream.push('```json\n{"name": "get_w') == []
    assert stream.push('eather", "arguments": {"city": "Paris"}} ') == []
    assert stream.push("and more") == [
        ContentDelta('```json\n{"name": "get_weather", "arguments": {"city": "Paris"}} and more')
    ]
    stream = ToolCallStream(ids(), NAMES)
    assert stream.push('{"name": "get_stock"') == [ContentDelta('{"name": "get_stock"')]


@pytest.mark.parametrize("text, content, calls", REPLIES)
def test_streamed_content_never_shows_part_of_a_tag(text, content, calls):
    """At every point, the content streamed so far is a prefix of the final content: nothing is
    emitted and later found to be a tag (so no ``<tool_c`` ever reaches a client)."""
    stream, shown = ToolCallStream(), ""
    for char in text:
        shown += "".join(event.text for event in stream.push(char) if isinstance(event, ContentDelta))
        assert (content or "").startswith(shown)


def test_text_that_could_start_a_tag_is_held_back_until_it_cannot():
    stream = ToolCallStream()
    assert stream.push("Hello <tool_c") == [ContentDelta("Hello")]
    assert stream.push("x") == [ContentDelta(" <tool_cx")]
    assert stream.push(" a <") == [ContentDelta(" a")]
    assert stream.push("b") == [ContentDelta(" <b")]
    assert stream.finish() == []


def test_a_call_streams_its_name_once_then_argument_fragments():
    stream = ToolCallStream(ids())
    assert stream.push('Sure.\n<tool_call>\n{"name": "get_wea') == [ContentDelta("Sure.")]
    assert stream.push('ther", "arguments": {"ci') == [
        ToolCallDelta(0, "call_" + "0" * 24, "get_weather", ""),
        ToolCallDelta(0, None, None, '{"ci'),
    ]
    assert stream.push('ty": "Paris"') == [ToolCallDelta(0, None, None, 'ty": "Paris"')]
    assert stream.push("}}\n</tool_") == [ToolCallDelta(0, None, None, "}")]
    assert stream.push("call>") == []
    assert stream.finish() == []
    assert stream.calls == 1


def test_deltas_as_openai_chunks_give_them():
    first, fragment = ToolCallDelta(1, "call_x", "f", ""), ToolCallDelta(1, None, None, '{"a"')
    assert first.to_openai() == {
        "index": 1,
        "id": "call_x",
        "type": "function",
        "function": {"name": "f", "arguments": ""},
    }
    assert fragment.to_openai() == {"index": 1, "function": {"arguments": '{"a"'}}


def test_a_reply_cut_inside_the_arguments_keeps_the_call_begun():
    """As OpenAI's replies cut by max_tokens (finish_reason "length"): the arguments are unfinished."""
    text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par'
    assert calls_of(parse_tool_calls(text)) == [("get_weather", '{"city": "Par')]
    assert replay(stream_one_char_at_a_time(text)) == (None, [("get_weather", '{"city": "Par')])


def test_format_tool_call_is_what_the_template_writes_and_reads_back():
    assert CALL == '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}\n</tool_call>'
    assert calls_of(parse_tool_calls(CALL)) == [("get_weather", '{"city": "Paris", "days": 2}')]


# --- validation ------------------------------------------------------------------------------------
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


# --- the grammar's text ----------------------------------------------------------------------------
def test_required_grammar_offers_every_tool_and_parallel_calls():
    source = tool_call_constraint(tools_from_openai([WEATHER, TIME]), ToolChoice("required"), parallel=True).source
    assert source.splitlines()[:2] == [
        'start: call ("\\n" call)* "\\n"?',
        'call: <tool_call> "\\n{\\"name\\": " (fn_0 | fn_1) "}\\n" </tool_call>',
    ]
    assert 'fn_0: "\\"get_weather\\", \\"arguments\\": " args_0' in source
    assert '"x-guidance": {"whitespace_flexible": false, "item_separator": ", ", "key_separator": ": "}' in source


def test_a_named_function_grammar_offers_exactly_one_call_of_it():
    source = tool_call_constraint(
        tools_from_openai([WEATHER, TIME]), ToolChoice("function", "get_time"), parallel=True
    ).source
    assert source.startswith("start: call\n") and "fn_1" not in source and '"\\"get_time\\", ' in source


def test_tags_are_text_where_the_vocabulary_has_no_tag_tokens():
    source = tool_call_constraint(
        tools_from_openai([TIME]), ToolChoice("required"), parallel=False, tag_tokens=False
    ).source
    assert 'call: "<tool_call>" "\\n{\\"name\\": " (fn_0) "}\\n" "</tool_call>"' in source


@pytest.mark.parametrize(
    "choice, error",
    [(ToolChoice("auto"), ValueError), (ToolChoice("none"), ValueError), (ToolChoice("function", "nope"), ToolError)],
)
def test_a_grammar_only_for_required_or_a_known_function(choice, error):
    with pytest.raises(error):
        tool_call_constraint(tools_from_openai([WEATHER]), choice)


def test_the_grammars_check():
    tools = tools_from_openai([WEATHER, TIME])
    for choice, parallel in [
        (ToolChoice("required"), True),
        (ToolChoice("required"), False),
        (ToolChoice("function", "get_weather"), False),
    ]:
        tool_call_constraint(tools, choice, parallel).check()


# --- the grammar on the real vocabulary (both backends) ----------------------------------------------
@pytest.fixture(scope="module", params=["transformers", "llama-cpp"])
def qwen(request, real_model):
    return real_model("qwen2.5-coder-0.5b", request.param)


def accepted(model, constraint, text):
    """How many of the tokens of ``text`` then the end of turn the grammar takes, and of how many."""
    grammar = model.grammar_compiler().grammar(constraint)
    tokens = model.tokenizer.encode(text) + [model.tokenizer.encode("<|im_end|>")[0]]
    return grammar.advance(tokens), len(tokens)


@pytest.mark.slow
def test_the_grammar_takes_a_right_call_and_refuses_wrong_ones_on_qwen(qwen):
    assert tags_are_tokens(qwen.tokenizer)
    assert qwen.tokenizer.encode(CALL)[0] == qwen.tokenizer.encode("<tool_call>")[0]
    tools = tools_from_openai([WEATHER, TIME, SEARCH])
    required = tool_call_constraint(tools, ToolChoice("required"), parallel=True)
    single = tool_call_constraint(tools, ToolChoice("required"), parallel=False)
    named = tool_call_constraint(tools, ToolChoice("function", "get_time"))
    two = f"{CALL}\n{format_tool_call('get_time', '{}')}"
    right = [
        (required, CALL),
        (required, two),
        (single, CALL),
        (named, format_tool_call("get_time", "{}")),
        (required, format_tool_call("search", '{"query": "x"}')),
    ]
    for constraint, text in right:
        taken, total = accepted(qwen, constraint, text)
        assert taken == total, text
    for constraint, text in [
        (required, CALL.replace("get_weather", "get_wether")),  # a name not in tools
        (named, CALL),  # another function than the named one
        (single, two),  # two calls where one is allowed
        (required, CALL.replace('"city": "Paris"', '"city":"Paris"')),  # not the fixed JSON style
        (required, CALL.replace('"days": 2', '"days": "2"')),  # arguments outside the schema
        (required, CALL.replace("<tool_call>", "<tool_call> ")),
        (required, format_tool_call("search", '{"query": "x", "limit": 3}')),  # an argument the tool does not declare
    ]:
        taken, total = accepted(qwen, constraint, text)
        assert taken < total, text

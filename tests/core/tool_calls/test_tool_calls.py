"""specdraft.tool_calls: the Qwen2.5 / Hermes tool-call format. Parsing a reply, and streaming it one
character at a time (never a partial ``<tool_call`` as content, and the same answer as parsing it
whole), with and without the request's tool names (untagged calls). Validation messages: ``test_tool_spec.py``;
the grammar's text and (slow) the grammar on qwen2.5-coder-0.5b's vocabulary: ``test_tool_call_grammar.py``."""

from __future__ import annotations

import itertools
import json
import re

import pytest
from tool_call_fixtures import CALL

from specdraft.tool_calls import (
    TOOL_CALL_OPEN,
    ContentDelta,
    ToolCallDelta,
    ToolCallStream,
    format_tool_call,
    new_call_id,
    parse_tool_calls,
)

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

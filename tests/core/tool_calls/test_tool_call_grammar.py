"""specdraft.tool_calls' grammar for the Qwen2.5 / Hermes format (``tool_call_constraint``): its text
for each tool choice, and (slow) the grammar compiled on qwen2.5-coder-0.5b's vocabulary on both
backends, accepting a right call and refusing wrong ones."""

from __future__ import annotations

import pytest
from tool_call_fixtures import CALL, SEARCH, TIME, WEATHER

from specdraft.tool_calls import (
    ToolChoice,
    ToolError,
    format_tool_call,
    tags_are_tokens,
    tool_call_constraint,
    tools_from_openai,
)


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

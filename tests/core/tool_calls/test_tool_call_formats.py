"""specdraft.tool_calls' families (Llama 3.x JSON calls, Mistral's [TOOL_CALLS]) and the chooser.

Each family's calls are written as its chat template renders them: the templates in ``templates/``
(written for these tests from the families' format descriptions) are first checked against the
published format (the Llama 3.2 template's rendering; Mistral's as ``mistral_common`` encodes the same
conversation), then an assistant turn they render is read back by the family's stream parser (whole,
one character at a time, with and without the tag the tokenizer's decode drops), and its grammar takes
that text, in tokens, on a vocabulary where the tags are special tokens, and refuses wrong calls. The
chooser picks the family from those templates and, slow, from the real templates of the packaged
models. No Llama 3.x or Mistral model is in reach offline (``../shared/MODELS.md``): there is no test
on such a model's weights.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from chat_checkpoint import CHAT_TEMPLATE
from tiny_models import make_tiny_model

from specdraft.chat_template import render_chat
from specdraft.tool_calls import (
    FORMATS,
    HERMES,
    LLAMA3,
    MISTRAL,
    ContentDelta,
    ToolCallDelta,
    ToolChoice,
    ToolError,
    format_by_name,
    format_for_model,
    format_for_template,
    tools_from_openai,
)

TEMPLATES = Path(__file__).parent / "templates"
LLAMA3_TEMPLATE = (TEMPLATES / "llama3.2.jinja").read_text()
MISTRAL_TEMPLATE = (TEMPLATES / "mistral.jinja").read_text()
LLAMA3_TOKENS = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}
MISTRAL_TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}

CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "w", "parameters": CITY}}
TIME = {"type": "function", "function": {"name": "get_time"}}
TOOLS = tools_from_openai([WEATHER, TIME])
NAMES = ["get_weather", "get_time"]


def call(id_: str, name: str, arguments: dict) -> dict:
    """An assistant message's ``tool_calls`` entry, arguments as an object (as templates take them)."""
    return {"id": id_, "type": "function", "function": {"name": name, "arguments": arguments}}


def conversation(calls: list[dict]) -> list[dict]:
    return [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "tool_calls": calls},
        *[{"role": "tool", "tool_call_id": c["id"], "content": "sunny"} for c in calls],
    ]


PARIS = call("abcdefghi", "get_weather", {"city": "Paris"})
LYON = call("bcdefghij", "get_weather", {"city": "Lyon"})


# --- the templates render each family's published format -------------------------------------------
def test_the_mistral_template_renders_as_mistral_common_encodes():
    """mistral_common 1.13.1's ``encode_chat_completion`` (tekken_240718) of the same conversation."""
    expected = (
        '<s>[AVAILABLE_TOOLS][{"type": "function", "function": {"name": "get_weather", "description": "w", '
        '"parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]'
        "[/AVAILABLE_TOOLS][INST]Be brief.\n\nWeather in Paris?[/INST]"
        '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abcdefghi"}, '
        '{"name": "get_weather", "arguments": {"city": "Lyon"}, "id": "bcdefghij"}]</s>'
        '[TOOL_RESULTS]{"content": "sunny", "call_id": "abcdefghi"}[/TOOL_RESULTS]'
        '[TOOL_RESULTS]{"content": "sunny", "call_id": "bcdefghij"}[/TOOL_RESULTS]'
    )
    assert render_chat(MISTRAL_TEMPLATE, conversation([PARIS, LYON]), MISTRAL_TOKENS, [WEATHER]) == expected


def test_the_llama3_template_renders_the_published_format():
    """Llama 3.2's: tools in the first user message, the call as a bare JSON object with "parameters"."""
    text = render_chat(LLAMA3_TEMPLATE, conversation([PARIS]), LLAMA3_TOKENS, [WEATHER])
    assert text.startswith("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\n")
    assert '"parameters": dictionary of argument name and its value}.' in text
    assert text.endswith(
        "Weather in Paris?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
        '{"name": "get_weather", "parameters": {"city": "Paris"}}<|eot_id|>'
        '<|start_header_id|>ipython<|end_header_id|>\n\n"sunny"<|eot_id|>'
        "<|start_header_id|>assistant<|end_header_id|>\n\n"
    )


# --- the chooser -----------------------------------------------------------------------------------
LLAMA31_BUILTIN = (
    "{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{{- '<|python_tag|>' + call.name + '.call(' }}"
)


@pytest.mark.parametrize(
    "template, family",
    [
        (LLAMA3_TEMPLATE, LLAMA3),
        (LLAMA31_BUILTIN, LLAMA3),  # Llama 3.1's built-in tool calls
        (MISTRAL_TEMPLATE, MISTRAL),
        ("{{ '<|im_start|>' }}{% if tools %}<tool_call>{% endif %}", HERMES),
        (CHAT_TEMPLATE, HERMES),  # no family's markers: the default
        ("{{ '<|start_header_id|>' + m.role + '<|end_header_id|>' }}", HERMES),  # Llama 3 without tools
        ("{{ '[TOOL_CALLS]' + name + '[ARGS]' + args }}", HERMES),  # Mistral's later format is not this one
        ("", HERMES),
        (None, HERMES),
    ],
)
def test_the_family_is_chosen_from_the_chat_template(template, family):
    assert format_for_template(template) is family


def test_the_registry_names_each_family_once():
    assert [fmt.name for fmt in FORMATS] == ["hermes", "llama3", "mistral"]
    assert all(format_by_name(fmt.name) is fmt for fmt in FORMATS)
    with pytest.raises(ValueError, match="hermes, llama3, mistral"):
        format_by_name("nope")


def test_a_model_gives_its_template_s_format(vocabulary_model):
    model = vocabulary_model
    assert model.chat_template == MISTRAL_TEMPLATE and format_for_model(model) is MISTRAL
    assert format_for_model(SimpleNamespace(chat_template=None)) is HERMES  # a model without a template: the default


# --- each family's reader, on the text its template renders -------------------------------------------
def assistant_turn(fmt, calls: list[dict]) -> str:
    """The assistant's answer in a rendered conversation, as the model writes it (before its end of turn)."""
    if fmt is LLAMA3:
        text = render_chat(LLAMA3_TEMPLATE, conversation(calls), LLAMA3_TOKENS, [WEATHER, TIME])
        return text.split("<|start_header_id|>assistant<|end_header_id|>\n\n")[1].split("<|eot_id|>")[0]
    text = render_chat(MISTRAL_TEMPLATE, conversation(calls), MISTRAL_TOKENS, [WEATHER, TIME])
    return "[TOOL_CALLS]" + text.split("[TOOL_CALLS]")[1].split("</s>")[0]


def expected_calls(calls: list[dict]) -> list[tuple[str, str]]:
    return [(c["function"]["name"], json.dumps(c["function"]["arguments"])) for c in calls]


def read(fmt, text, tool_names=None, one_char_at_a_time=False):
    """(content, [(name, arguments)], [id]) as the format's stream gives them, checking the events' shape."""
    stream = fmt.stream(tool_names)
    events = []
    for piece in text if one_char_at_a_time else [text]:
        events.extend(stream.push(piece))
    events += stream.finish()
    content, calls, ids = "", [], []
    for event in events:
        if isinstance(event, ContentDelta):
            content += event.text
        else:
            assert isinstance(event, ToolCallDelta)
            if event.id is not None:
                assert event.index == len(calls) and event.arguments == ""
                calls.append([event.name, ""])
                ids.append(event.id)
            else:
                calls[event.index][1] += event.arguments
    return content or None, [tuple(c) for c in calls], ids


CASES = [(LLAMA3, [PARIS]), (MISTRAL, [PARIS]), (MISTRAL, [PARIS, LYON])]


@pytest.mark.parametrize("fmt, calls", CASES)
@pytest.mark.parametrize("tag_decoded", [True, False])
@pytest.mark.parametrize("tool_names", [None, NAMES])
def test_a_rendered_call_reads_back_whole_and_streamed(fmt, calls, tag_decoded, tool_names):
    """With the tag, and without it as a tokenizer's decode gives a special token's text; whole, and
    one character at a time; constrained (any name) and in auto mode (the request's tools)."""
    text = assistant_turn(fmt, calls)
    if not tag_decoded:
        text = text.removeprefix("[TOOL_CALLS]")
    for streamed in (False, True):
        content, read_calls, _ = read(fmt, text, tool_names, streamed)
        assert (content, read_calls) == (None, expected_calls(calls))
    reply = fmt.parse(text, tool_names)
    assert reply.content is None and [(c.name, c.arguments) for c in reply.calls] == expected_calls(calls)


def test_the_grammar_writes_what_the_template_replays():
    for fmt, calls in CASES:
        text = assistant_turn(fmt, calls)
        if fmt is MISTRAL:  # the template adds the ids the grammar does not ask the model for
            text = re.sub(r', "id": "[A-Za-z0-9]{9}"', "", text)
        assert fmt.format_calls(expected_calls(calls)) == text


def test_mistral_call_ids_are_what_its_template_takes_back():
    content, calls, ids = read(MISTRAL, MISTRAL.format_calls([("get_weather", '{"city": "Paris"}')]))
    assert all(re.fullmatch(r"[A-Za-z0-9]{9}", id_) for id_ in ids) and len(ids) == 1
    history = conversation([call(ids[0], "get_weather", {"city": "Paris"})])
    assert f'"id": "{ids[0]}"' in render_chat(MISTRAL_TEMPLATE, history, MISTRAL_TOKENS, [WEATHER])
    assert re.fullmatch(r"call_[0-9a-f]{24}", read(LLAMA3, LLAMA3.format_calls([("get_time", "{}")]))[2][0])


LLAMA3_REPLIES = [
    ('<|python_tag|>{"name": "get_time", "parameters": {}}', [("get_time", "{}")]),
    ('{"name": "get_time", "arguments": {}}', [("get_time", "{}")]),  # "arguments" as vLLM accepts it
    (
        '{"name": "get_time", "parameters": {}}; {"name": "get_weather", "parameters": {"city": "Rome"}}',
        [("get_time", "{}"), ("get_weather", '{"city": "Rome"}')],
    ),
    ('```json\n{"name": "get_time", "parameters": {}}\n```', [("get_time", "{}")]),
]
MISTRAL_REPLIES = [
    ('[TOOL_CALLS] [{"name": "get_time", "arguments": {}}]', [("get_time", "{}")]),  # SentencePiece's space
    ('[{"name": "get_time", "arguments": {}, "id": "abcdefghi"}]', [("get_time", "{}")]),
    ('{"name": "get_time", "arguments": {}}', [("get_time", "{}")]),
]


@pytest.mark.parametrize(
    "fmt, text, calls", [(LLAMA3, *reply) for reply in LLAMA3_REPLIES] + [(MISTRAL, *r) for r in MISTRAL_REPLIES]
)
def test_calls_as_models_write_them(fmt, text, calls):
    for streamed in (False, True):
        assert read(fmt, text, NAMES, streamed)[:2] == (None, calls)


@pytest.mark.parametrize("fmt", [LLAMA3, MISTRAL])
@pytest.mark.parametrize(
    "text",
    [
        "It is sunny in Paris.",
        '{"name": "get_news", "parameters": {}}',  # not one of the request's tools (auto mode)
        '{"name": "get_time", "parameters": {}, "extra": 1}',  # a key a call does not have
        'Let me check. {"name": "get_time", "parameters": {}}',  # text before: content
        '{"name": "get_time", "parameters": {}} done',
        "[1, 2]",
    ],
)
def test_anything_else_is_content(fmt, text):
    for streamed in (False, True):
        assert read(fmt, text, NAMES, streamed)[:2] == (text, [])


@pytest.mark.parametrize("fmt", [LLAMA3, MISTRAL])
def test_text_that_cannot_be_a_call_is_released_at_once(fmt):
    stream, tag = fmt.stream(NAMES), "[TOOL_CALLS]" if fmt is MISTRAL else "<|python_tag|>"
    assert stream.push(tag[:5]) == [] and stream.push(tag[5:]) == [] and stream.push("{") == []  # could be a call
    assert stream.push("x") == [ContentDelta(tag + "{x")]  # cannot: content


# --- the grammars -----------------------------------------------------------------------------------
def test_llama3_grammar_is_one_call_with_parameters():
    for parallel in (True, False):
        source = LLAMA3.constraint(TOOLS, ToolChoice("required"), parallel).source
        assert source.splitlines()[:3] == [
            "start: call",
            'call: "{\\"name\\": " (fn_0 | fn_1) "}"',
            'fn_0: "\\"get_weather\\", \\"parameters\\": " args_0',
        ]
    named = LLAMA3.constraint(TOOLS, ToolChoice("function", "get_time")).source
    assert "fn_1" not in named and '"\\"get_time\\", \\"parameters\\": "' in named


def test_mistral_grammar_is_a_list_after_the_tag():
    source = MISTRAL.constraint(TOOLS, ToolChoice("required"), parallel=True).source
    assert source.splitlines()[:2] == [
        'start: "[TOOL_CALLS]" "[" call (", " call)* "]"',
        'call: "{\\"name\\": " (fn_0 | fn_1) "}"',
    ]
    single = MISTRAL.constraint(TOOLS, ToolChoice("required"), parallel=False).source
    assert single.startswith('start: "[TOOL_CALLS]" "[" call "]"\n')


@pytest.mark.parametrize("fmt", [LLAMA3, MISTRAL])
def test_the_grammars_check_and_refuse_what_hermes_refuses(fmt):
    for choice, parallel in [(ToolChoice("required"), True), (ToolChoice("function", "get_weather"), False)]:
        fmt.constraint(TOOLS, choice, parallel).check()
    with pytest.raises(ValueError):
        fmt.constraint(TOOLS, ToolChoice("auto"))
    with pytest.raises(ToolError):
        fmt.constraint(TOOLS, ToolChoice("function", "nope"))
    with pytest.raises(ToolError):
        fmt.constraint((), ToolChoice("required"))


def chat_model(tokenizer, template: str):
    """A tiny model whose tokenizer has ``template`` and the families' tags as special tokens."""
    chat_tokenizer = copy.deepcopy(tokenizer)
    chat_tokenizer.add_special_tokens({"additional_special_tokens": ["[TOOL_CALLS]", "<|python_tag|>"]})
    chat_tokenizer.chat_template = template
    return make_tiny_model(chat_tokenizer, seed=0)


@pytest.fixture(scope="module")
def vocabulary_model(tokenizer):
    return chat_model(tokenizer, MISTRAL_TEMPLATE)


def taken(model, constraint, text):
    """How many of the tokens of ``text`` then the end of sequence the grammar takes, and of how many."""
    grammar = model.grammar_compiler().grammar(constraint)
    tokens = model.tokenizer.encode(text) + [model.tokenizer.hf.eos_token_id]
    return grammar.advance(tokens), len(tokens)


def test_the_grammars_take_the_rendered_calls_in_tokens_and_refuse_wrong_ones(vocabulary_model):
    model = vocabulary_model
    assert MISTRAL.tags_are_tokens(model.tokenizer) and not HERMES.tags_are_tokens(model.tokenizer)
    required = {fmt: fmt.constraint(TOOLS, ToolChoice("required"), True, model.tokenizer) for fmt in (LLAMA3, MISTRAL)}
    assert required[MISTRAL].source.startswith(f"start: <[{model.tokenizer.encode('[TOOL_CALLS]')[0]}]> ")
    single = MISTRAL.constraint(TOOLS, ToolChoice("required"), False, model.tokenizer)
    named = LLAMA3.constraint(TOOLS, ToolChoice("function", "get_time"), True, model.tokenizer)
    llama, mistral = LLAMA3.format_calls([("get_time", "{}")]), MISTRAL.format_calls([("get_time", "{}")])
    right = [(required[fmt], fmt.format_calls(expected_calls(calls))) for fmt, calls in CASES]
    for constraint, text in [*right, (named, llama), (single, mistral)]:
        accepted, total = taken(model, constraint, text)
        assert accepted == total, text
    for constraint, text in [
        (required[LLAMA3], llama.replace("get_time", "get_tim")),  # a name not in tools
        (required[LLAMA3], llama.replace("parameters", "arguments")),  # not the template's key
        (required[LLAMA3], f"{llama}; {llama}"),  # one call per reply
        (required[LLAMA3], "<|python_tag|>" + llama),  # the template replays no tag
        (named, LLAMA3.format_calls([("get_weather", '{"city": "Paris"}')])),  # another function
        (required[MISTRAL], mistral.removeprefix("[TOOL_CALLS]")),  # the tag is due
        (required[MISTRAL], mistral.replace('{"name"', '{ "name"')),  # not the fixed style
        (single, MISTRAL.format_calls([("get_time", "{}"), ("get_time", "{}")])),  # two where one is allowed
        (required[MISTRAL], MISTRAL.format_calls([("get_weather", '{"city": 3}')])),  # outside the schema
    ]:
        accepted, total = taken(model, constraint, text)
        assert accepted < total, text
    # the tag written as text is not the special token
    text_tag = [*model.tokenizer.encode("[TOOL"), *model.tokenizer.encode("_CALLS]")]
    assert model.grammar_compiler().grammar(required[MISTRAL]).advance(text_tag) == 0


# --- slow: the real chat templates of the packaged models ------------------------------------------------
_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}  # GGUF value type -> bytes
_STRING, _ARRAY = 8, 9


def gguf_chat_template(name: str) -> str | None:
    """The packaged model's ``tokenizer.chat_template`` from its GGUF header (read directly: the gguf
    package's reader maps every tensor, 20 s for the 0.5B)."""
    import struct

    from specdraft.models import gguf_path

    with open(gguf_path(name), "rb") as file:

        def unpack(fmt):
            return struct.unpack("<" + fmt, file.read(struct.calcsize(fmt)))[0]

        def string():
            return file.read(unpack("Q")).decode("utf-8")

        def skip(kind):
            if kind == _STRING:
                file.seek(unpack("Q"), 1)
            elif kind == _ARRAY:
                item, count = unpack("I"), unpack("Q")
                for _ in range(count) if item in (_STRING, _ARRAY) else ():
                    skip(item)
                if item not in (_STRING, _ARRAY):
                    file.seek(_SIZES[item] * count, 1)
            else:
                file.seek(_SIZES[kind], 1)

        assert file.read(4) == b"GGUF"
        _version, _tensors, fields = unpack("I"), unpack("Q"), unpack("Q")
        for _ in range(fields):
            key, kind = string(), unpack("I")
            if key == "tokenizer.chat_template":
                return string()
            skip(kind)
    return None


@pytest.mark.slow
def test_the_packaged_models_templates_choose_hermes():
    """Qwen2.5's template is recognised as Hermes (its ``<tool_call>`` section) and renders calls as
    ``HERMES.format_calls`` writes them; SmolLM2's ChatML has no tools section: the default."""
    qwen = gguf_chat_template("qwen2.5-coder-0.5b")
    assert HERMES.recognises(qwen) and not any(fmt.recognises(qwen) for fmt in FORMATS if fmt is not HERMES)
    assert format_for_template(qwen) is HERMES
    rendered = render_chat(qwen, conversation([PARIS, LYON]), {}, [WEATHER])
    assert HERMES.format_calls(expected_calls([PARIS, LYON])) in rendered
    smollm = gguf_chat_template("smollm2-135m")
    assert smollm and not any(fmt.recognises(smollm) for fmt in FORMATS) and format_for_template(smollm) is HERMES

"""Request validation and ServiceConfig, without a model or an app."""

import pytest

from specdraft import GenerationConfig, ModelConfig
from specdraft.apps.service.config import ServiceConfig
from specdraft.apps.service.protocol.chat import ChatMessage
from specdraft.apps.service.protocol.completions import check_context_length, parse_completion_request
from specdraft.apps.service.protocol.errors import RequestError, parse_json_body
from specdraft.retrieval.drafter_registry import DrafterSpec

CONFIG = ServiceConfig(model="tiny", drafter="prompt-lookup", max_tokens_limit=100, default_max_tokens=16)


def test_defaults_come_from_the_service_and_the_generation_config():
    request = parse_completion_request({"prompt": "hi"}, chat=False, config=CONFIG)
    assert request.prompt == "hi" and request.messages is None and not request.chat
    assert request.generation == GenerationConfig(max_new_tokens=16)
    assert request.drafter == DrafterSpec("prompt-lookup")
    assert request.stream is False


def test_every_field_maps_onto_the_generation_config():
    body = {
        "model": "tiny",
        "prompt": "hi",
        "max_tokens": 100,
        "temperature": 2,
        "top_p": 0.5,
        "top_k": 3,
        "seed": 7,
        "stop": ["a", "bc"],
        "stream": True,
        "drafter": "model:small",
        "logprobs": None,  # unknown fields are ignored
    }
    request = parse_completion_request(body, chat=False, config=CONFIG)
    assert request.generation == GenerationConfig(
        max_new_tokens=100, temperature=2.0, top_p=0.5, top_k=3, seed=7, stop=("a", "bc")
    )
    assert request.drafter == DrafterSpec("model", "small")
    assert request.stream is True and request.max_tokens == 100


def test_null_counts_as_absent():
    body = {"prompt": "hi", "model": None, "max_tokens": None, "temperature": None, "stop": None, "seed": None}
    request = parse_completion_request(body, chat=False, config=CONFIG)
    assert request.generation == GenerationConfig(max_new_tokens=16)


def test_a_single_stop_string_becomes_a_tuple():
    request = parse_completion_request({"prompt": "hi", "stop": "\n"}, chat=False, config=CONFIG)
    assert request.generation.stop == ("\n",)


def test_chat_messages_are_parsed_in_order():
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi", "name": "x"}]
    request = parse_completion_request({"messages": messages}, chat=True, config=CONFIG)
    assert request.chat and request.prompt is None
    assert request.messages == (ChatMessage("system", "be brief"), ChatMessage("user", "hi"))


@pytest.mark.parametrize(
    ("body", "chat", "param", "message"),
    [
        ({}, False, "prompt", "prompt is required"),
        (
            {"prompt": {"text": "a"}},
            False,
            "prompt",
            "prompt must be a string, got object",
        ),  # lists: test_openai_fields.py
        ({"prompt": ""}, False, "prompt", "must not be empty"),
        ({"prompt": "hi", "model": 3}, False, "model", "model must be a string"),
        ({"prompt": "hi", "model": "gpt-4"}, False, "model", "this server serves 'tiny'"),
        ({"prompt": "hi", "max_tokens": 101}, False, "max_tokens", "must be in [1, 100], got 101"),
        ({"prompt": "hi", "max_tokens": 1.5}, False, "max_tokens", "must be an integer, got number 1.5"),
        ({"prompt": "hi", "temperature": "hot"}, False, "temperature", 'must be a number, got string "hot"'),
        ({"prompt": "hi", "temperature": float("nan")}, False, "temperature", "must be finite"),
        ({"prompt": "hi", "top_p": 1.5}, False, "top_p", "must be in (0, 1], got 1.5"),
        ({"prompt": "hi", "top_k": -1}, False, "top_k", "must be >= 0, got -1"),
        ({"prompt": "hi", "seed": -1}, False, "seed", "seed must be in [0, "),
        ({"prompt": "hi", "seed": "7"}, False, "seed", "must be an integer"),
        ({"prompt": "hi", "stream": "yes"}, False, "stream", "must be true or false"),
        ({"prompt": "hi", "stop": 5}, False, "stop", "must be a string or a list of strings"),
        ({"prompt": "hi", "stop": ["a", ""]}, False, "stop", "stop[1] must be a non-empty string"),
        ({"prompt": "hi", "drafter": 1}, False, "drafter", "drafter must be a string"),
        ({"prompt": "hi", "drafter": "model:"}, False, "drafter", "unknown drafter"),
        ({"prompt": "hi", "drafter": "datastore"}, False, "drafter", "needs a datastore"),
        ({"prompt": "hi"}, True, "messages", "messages is required"),
        ({"messages": "hi"}, True, "messages", "messages must be a list"),
        ({"messages": []}, True, "messages", "at least one message"),
        ({"messages": ["hi"]}, True, "messages[0]", "must be an object with role and content"),
        (
            {"messages": [{"role": "function", "content": "x"}]},
            True,
            "messages[0].role",
            "one of system, user, assistant",
        ),
        (
            {"messages": [{"role": "tool", "content": "x"}]},
            True,
            "messages[0].tool_call_id",
            "tool_call_id is required",
        ),
        ({"messages": [{"role": "user"}]}, True, "messages[0].content", "must be a string, got null"),
    ],
)
def test_invalid_fields_name_the_param(body, chat, param, message):
    with pytest.raises(RequestError) as caught:
        parse_completion_request(body, chat=chat, config=CONFIG)
    assert caught.value.param == param
    assert message in caught.value.message


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "the request body is empty"),
        (b"  \n", "the request body is empty"),
        (b'{"prompt": ', "not valid JSON"),
        (b"\xff\xfe{", "not valid JSON"),
        (b"[" * 100_000, "not valid JSON"),
        (b"[1, 2]", "must be a JSON object, got array"),
        (b'"hi"', "must be a JSON object, got string"),
    ],
)
def test_bodies_that_are_not_one_json_object(data, message):
    with pytest.raises(RequestError) as caught:
        parse_json_body(data)
    assert message in caught.value.message and caught.value.param is None


def test_parse_json_body_returns_the_object():
    assert parse_json_body(b'{"prompt": "hi"}') == {"prompt": "hi"}


def test_context_length_allows_an_exact_fit_and_names_the_numbers_beyond_it():
    check_context_length(prompt_tokens=500, max_tokens=12, max_length=512, param="prompt")
    with pytest.raises(RequestError) as caught:
        check_context_length(prompt_tokens=500, max_tokens=13, max_length=512, param="prompt")
    assert caught.value.param == "prompt"
    for number in ("500", "13", "513", "512"):
        assert number in caught.value.message


def test_service_config_defaults_are_valid():
    config = ServiceConfig()
    assert config.drafter_spec == DrafterSpec("prompt-lookup")
    assert config.default_max_tokens <= config.max_tokens_limit


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"model": " "}, "model must name a model"),
        ({"drafter": "ngram"}, "unknown drafter"),
        ({"model": {"device": "tpu"}}, "device must be"),
        ({"model": {"dtype": "int8"}}, "dtype must be"),
        ({"max_tokens_limit": 0}, "max_tokens_limit must be >= 1"),
        ({"default_max_tokens": 0}, "default_max_tokens must be in"),
        ({"max_tokens_limit": 8, "default_max_tokens": 9}, "default_max_tokens must be in [1, max_tokens_limit=8]"),
        ({"max_request_bytes": 0}, "max_request_bytes must be >= 1"),
    ],
)
def test_service_config_rejects_bad_values(fields, message):
    with pytest.raises(ValueError) as caught:  # a dict: the fields of the ModelConfig
        ServiceConfig(**{k: ModelConfig(**v) if isinstance(v, dict) else v for k, v in fields.items()})
    assert message in str(caught.value)

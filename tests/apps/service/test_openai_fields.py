"""The OpenAI request shapes clients send (``protocol.chat``, ``protocol.completions``), validated without a model."""

import pytest

from specdraft import GenerationConfig
from specdraft.apps.service.config import ServiceConfig
from specdraft.apps.service.protocol.chat import MAX_PROMPTS, ChatMessage
from specdraft.apps.service.protocol.completions import MAX_CHOICES, MAX_N, MAX_SEED, parse_completion_request
from specdraft.apps.service.protocol.errors import RequestError

CONFIG = ServiceConfig(model="tiny", max_tokens_limit=100, default_max_tokens=16)
USER = {"role": "user", "content": "hi"}


def chat(**fields):
    return parse_completion_request({"messages": [USER], **fields}, chat=True, config=CONFIG)


def text(prompt="hi", **fields):
    return parse_completion_request({"prompt": prompt, **fields}, chat=False, config=CONFIG)


def rejected(body, chat_endpoint=False, config=CONFIG):
    with pytest.raises(RequestError) as caught:
        parse_completion_request(body, chat=chat_endpoint, config=config)
    return caught.value


# --- messages -------------------------------------------------------------------------------------
def test_content_parts_are_joined_and_developer_is_a_system_message():
    messages = [
        {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
        {"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}], "name": "ann"},
        {"role": "assistant", "content": [], "refusal": None},
    ]
    request = parse_completion_request({"messages": messages}, chat=True, config=CONFIG)
    assert request.messages == (
        ChatMessage("system", "Be brief."),
        ChatMessage("user", "one\ntwo"),
        ChatMessage("assistant", ""),
    )


@pytest.mark.parametrize(
    ("message", "param", "words"),
    [
        (
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]},
            "messages[0].content[0]",
            'string "image_url" part',
        ),
        ({"role": "user", "content": [{"type": "input_audio"}]}, "messages[0].content[0]", "reads text only"),
        ({"role": "user", "content": ["hi"]}, "messages[0].content[0]", "must be a part"),
        ({"role": "user", "content": [{"type": "text", "text": 3}]}, "messages[0].content[0].text", "must be a string"),
        (
            {"role": "user", "content": 3},
            "messages[0].content",
            "must be a string, got number 3 (or a list of text parts)",
        ),
        ({"role": "function", "content": "42"}, "messages[0].role", "send a tool message"),
        (
            {"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": "{}"}},
            "messages[0].function_call",
            "send tool_calls",
        ),
    ],
)
def test_what_a_text_only_server_cannot_read_is_named(message, param, words):
    error = rejected({"messages": [message]}, chat_endpoint=True)
    assert error.param == param and words in error.message


# --- prompts --------------------------------------------------------------------------------------
def test_prompt_shapes():
    assert text("hi").prompts == ("hi",) and text("hi").prompt == "hi"
    assert text(["hi"]).prompts == ("hi",) and text(["hi"]).prompt == "hi"
    assert text(["a", "b"]).prompts == ("a", "b") and text(["a", "b"]).prompt is None
    assert text([5, 6, 7]).prompts == ((5, 6, 7),)
    assert text([[5, 6], "b"]).prompts == ((5, 6), "b")
    assert text(["a"] * MAX_PROMPTS).prompts == ("a",) * MAX_PROMPTS


@pytest.mark.parametrize(
    ("prompt", "words"),
    [
        ([], "must not be an empty list"),
        (["a", ""], "prompt[1] must not be empty"),
        (["a", 3.5], "prompt[1] must be a string or a non-empty list of token ids"),
        ([[]], "prompt[0] must be a string or a non-empty list of token ids"),
        ([[1, -1]], "token ids (integers >= 0)"),
        ([True, 1], "prompt[0] must be a string or a non-empty list"),
        (["a"] * (MAX_PROMPTS + 1), f"at most {MAX_PROMPTS} prompts"),
    ],
)
def test_bad_prompt_lists(prompt, words):
    error = rejected({"prompt": prompt})
    assert error.param == "prompt" and words in error.message


# --- model names ----------------------------------------------------------------------------------
def test_model_names_the_served_model_an_alias_or_any_when_configured():
    aliased = ServiceConfig(model="tiny", model_aliases=("gpt-3.5-turbo", "gpt-4o"))
    parse_completion_request({"prompt": "hi", "model": "gpt-4o"}, chat=False, config=aliased)
    error = rejected({"prompt": "hi", "model": "gpt-4"}, config=aliased)
    assert error.param == "model"
    assert (
        error.message
        == "model 'gpt-4' is not served here; this server serves 'tiny' (also answering to 'gpt-3.5-turbo', 'gpt-4o')"
    )
    anything = ServiceConfig(model="tiny", serve_any_model_name=True)
    parse_completion_request({"prompt": "hi", "model": "gpt-4"}, chat=False, config=anything)
    assert rejected({"prompt": "hi", "model": 4}, config=anything).param == "model"  # still a string


# --- max_completion_tokens, n, seeds --------------------------------------------------------------
def test_max_completion_tokens_is_max_tokens():
    assert text(max_completion_tokens=5).max_tokens == 5
    assert chat(max_completion_tokens=5, max_tokens=5).max_tokens == 5
    error = rejected({"prompt": "hi", "max_tokens": 5, "max_completion_tokens": 7})
    assert error.param == "max_completion_tokens" and "differ" in error.message
    error = rejected({"prompt": "hi", "max_completion_tokens": 101})
    assert error.param == "max_completion_tokens" and "must be in [1, 100]" in error.message


def test_n_and_the_seed_of_each_choice():
    request = text(n=3, seed=7, temperature=1.0)
    assert request.n == 3
    assert [request.choice_generation(j).seed for j in range(3)] == [7, 8, 9]
    assert request.choice_generation(2) == GenerationConfig(max_new_tokens=16, temperature=1.0, seed=9)
    assert text(n=2).choice_generation(1).seed is None  # unseeded: each choice draws its own
    assert text(n=2, seed=MAX_SEED).choice_generation(1).seed == 0  # modulo 2**63
    assert text(["a"] * (MAX_CHOICES // MAX_N), n=MAX_N).n == MAX_N


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"prompt": "hi", "n": 0}, f"n must be in [1, {MAX_N}]"),
        ({"prompt": "hi", "n": MAX_N + 1}, f"n must be in [1, {MAX_N}]"),
        ({"prompt": ["a"] * 3, "n": MAX_N}, f"at most {MAX_CHOICES} per request"),
    ],
)
def test_too_many_choices(body, words):
    error = rejected(body)
    assert error.param == "n" and words in error.message


# --- logprobs -------------------------------------------------------------------------------------
def test_logprobs_become_the_number_of_alternatives():
    assert chat().generation.logprobs is None
    assert chat(logprobs=False).generation.logprobs is None
    assert chat(logprobs=True).generation.logprobs == 0
    assert chat(logprobs=True, top_logprobs=20).generation.logprobs == 20
    assert text().generation.logprobs is None
    assert text(logprobs=0).generation.logprobs == 0
    assert text(logprobs=5).generation.logprobs == 5


@pytest.mark.parametrize(
    ("body", "chat_endpoint", "param", "words"),
    [
        ({"top_logprobs": 2}, True, "top_logprobs", "top_logprobs needs logprobs: true"),
        ({"logprobs": False, "top_logprobs": 2}, True, "top_logprobs", "needs logprobs: true"),
        ({"logprobs": True, "top_logprobs": 21}, True, "top_logprobs", "must be in [0, 20]"),
        ({"logprobs": 3}, True, "logprobs", "must be true or false"),
        ({"logprobs": 6}, False, "logprobs", "must be in [0, 5]"),
        ({"logprobs": True}, False, "logprobs", "must be an integer"),
    ],
)
def test_bad_logprobs(body, chat_endpoint, param, words):
    error = rejected({**({"messages": [USER]} if chat_endpoint else {"prompt": "hi"}), **body}, chat_endpoint)
    assert error.param == param and words in error.message


# --- stream_options and the fields that are ignored or refused -------------------------------------
def test_include_usage_counts_only_when_streaming():
    assert chat(stream=True, stream_options={"include_usage": True}).include_usage
    assert not chat(stream=True, stream_options={"include_usage": False}).include_usage
    assert not chat(stream_options={"include_usage": True}).include_usage
    assert rejected({"prompt": "hi", "stream_options": "usage"}).param == "stream_options"
    assert rejected({"prompt": "hi", "stream": True, "stream_options": {"include_usage": 1}}).param == "stream_options"


def test_harmless_fields_and_neutral_values_pass():
    body = {
        "user": "u1",
        "store": False,
        "metadata": {"a": "b"},
        "service_tier": "auto",
        "parallel_tool_calls": True,
        "tools": [],
        "tool_choice": "none",
        "functions": [],
        "function_call": "auto",
        "response_format": {"type": "text"},
        "presence_penalty": 0,
        "frequency_penalty": 0.0,
        "logit_bias": {},
        "echo": False,
        "best_of": 1,
        "suffix": "",
        "modalities": ["text"],
        "audio": None,
        "reasoning_effort": "low",
    }
    assert chat(**body).generation == GenerationConfig(max_new_tokens=16)


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("functions", [{"name": "f"}], "send tools"),
        ("function_call", {"name": "f"}, "send tools"),
        ("presence_penalty", 0.5, "presence_penalty is not supported"),
        ("frequency_penalty", -1, "frequency_penalty is not supported"),
        ("frequency_penalty", 3, "must be in [-2, 2]"),
        ("presence_penalty", "0", "must be a number"),
        ("logit_bias", {"50256": -100}, "logit_bias is not supported"),
        ("echo", True, "echo is not supported"),
        ("echo", "yes", "must be true or false"),
        ("best_of", 2, "best_of > 1 is not supported"),
        ("best_of", 0, "best_of must be >= 1"),
        ("suffix", "}", "suffix is not supported"),
        ("audio", {"voice": "alloy", "format": "wav"}, "audio is not supported"),
        ("modalities", ["text", "audio"], 'only ["text"]'),
    ],
)
def test_unsupported_fields_are_refused_not_ignored(field, value, words):
    for endpoint, base in ((True, {"messages": [USER]}), (False, {"prompt": "hi"})):
        error = rejected({**base, field: value}, chat_endpoint=endpoint)
        assert error.param == field and words in error.message

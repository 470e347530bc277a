"""The clients users run, against a live server on loopback: the official ``openai`` SDK and
LangChain's ``ChatOpenAI`` and ``OpenAI`` (langchain_openai), on the tiny service app.

Every answer must be the target's own: greedy text equals ``SpeculativeGenerator.generate`` without
a drafter (``greedy``), whatever the client, streamed or not. LangChain's classes never count
tokens here (that would fetch tiktoken's encodings): ``max_tokens`` is always set.
"""

import pytest
from live_server import LiveServer
from openai import BadRequestError, OpenAI
from test_service_api import MESSAGES, PROMPT, greedy
from tiny_service import SERVED, make_app, make_chat_model

from specdraft import GenerationConfig, SpeculativeGenerator

MAX_TOKENS = 10


@pytest.fixture(scope="module")
def model(tokenizer):
    return make_chat_model(tokenizer)


@pytest.fixture(scope="module")
def server(model):
    """The served model also answers to a client default (``gpt-3.5-turbo``)."""
    with LiveServer(make_app(model, model_aliases=("gpt-3.5-turbo",))) as live:
        yield live


@pytest.fixture(scope="module")
def client(server):
    return OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0, timeout=120)


@pytest.fixture(scope="module")
def chat_reference(model):
    return greedy(model, model.encode_chat(MESSAGES), MAX_TOKENS)


@pytest.fixture(scope="module")
def completion_reference(model):
    return greedy(model, model.encode(PROMPT), MAX_TOKENS)


# --- the openai SDK -------------------------------------------------------------------------------
def test_sdk_chat_with_max_completion_tokens(client, chat_reference):
    response = client.chat.completions.create(model=SERVED, messages=MESSAGES, max_completion_tokens=MAX_TOKENS)
    [choice] = response.choices
    assert choice.message.content == chat_reference.text
    assert choice.message.role == "assistant"
    assert choice.finish_reason == chat_reference.finish_reason
    assert response.usage.completion_tokens == len(chat_reference.token_ids)
    assert response.model == SERVED


def test_sdk_chat_with_content_parts_and_the_developer_role(client, model):
    messages = [
        {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
        {
            "role": "user",
            "content": [{"type": "text", "text": "What does"}, {"type": "text", "text": "the fox do?"}],
            "name": "ann",
        },
    ]
    as_template_sees_them = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What does\nthe fox do?"},
    ]
    reference = greedy(model, model.encode_chat(as_template_sees_them), MAX_TOKENS)
    response = client.chat.completions.create(model=SERVED, messages=messages, max_tokens=MAX_TOKENS)
    assert response.choices[0].message.content == reference.text


def test_sdk_chat_stream_with_usage(client, chat_reference):
    chunks = list(
        client.chat.completions.create(
            model=SERVED,
            messages=MESSAGES,
            max_completion_tokens=MAX_TOKENS,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    *pieces, usage_chunk = chunks
    assert "".join(chunk.choices[0].delta.content or "" for chunk in pieces) == chat_reference.text
    assert pieces[-1].choices[0].finish_reason == chat_reference.finish_reason
    assert usage_chunk.choices == []
    assert usage_chunk.usage.completion_tokens == len(chat_reference.token_ids)
    assert usage_chunk.usage.prompt_tokens == len(chat_reference.prompt_token_ids)


def test_sdk_completion_and_its_stream(client, completion_reference):
    response = client.completions.create(model=SERVED, prompt=PROMPT, max_tokens=MAX_TOKENS)
    assert response.choices[0].text == completion_reference.text
    stream = client.completions.create(model=SERVED, prompt=PROMPT, max_tokens=MAX_TOKENS, stream=True)
    assert "".join(chunk.choices[0].text for chunk in stream) == completion_reference.text


def test_sdk_completion_of_several_prompts_and_token_ids(client, model, completion_reference):
    other = "The dog sleeps."
    response = client.completions.create(
        model=SERVED, prompt=[PROMPT, other, model.encode(other)], max_tokens=MAX_TOKENS
    )
    other_text = greedy(model, model.encode(other), MAX_TOKENS).text
    assert [(c.index, c.text) for c in response.choices] == [
        (0, completion_reference.text),
        (1, other_text),
        (2, other_text),
    ]


def test_sdk_predicted_output(client, chat_reference):
    response = client.chat.completions.create(
        model=SERVED,
        messages=MESSAGES,
        max_tokens=MAX_TOKENS,
        prediction={"type": "content", "content": chat_reference.text},
    )
    assert response.choices[0].message.content == chat_reference.text
    assert response.usage.completion_tokens_details.accepted_prediction_tokens > 0


def test_sdk_n_seeded_choices(client, model):
    settings = {"temperature": 1.0, "seed": 5}
    response = client.chat.completions.create(model=SERVED, messages=MESSAGES, max_tokens=MAX_TOKENS, n=3, **settings)
    prompt_ids = model.encode_chat(MESSAGES)
    expected = [greedy(model, prompt_ids, MAX_TOKENS, temperature=1.0, seed=5 + i).text for i in range(3)]
    assert [c.message.content for c in response.choices] == expected
    assert [c.index for c in response.choices] == [0, 1, 2]
    assert len(set(expected)) > 1, "the seeds should differ"
    assert response.usage.completion_tokens == sum(
        len(greedy(model, prompt_ids, MAX_TOKENS, temperature=1.0, seed=5 + i).token_ids) for i in range(3)
    )


def test_sdk_logprobs_are_the_targets_own(client, model, chat_reference, completion_reference):
    reference = SpeculativeGenerator(model).generate(
        chat_reference.prompt_token_ids, None, GenerationConfig(max_new_tokens=MAX_TOKENS, logprobs=2)
    )
    response = client.chat.completions.create(
        model=SERVED, messages=MESSAGES, max_tokens=MAX_TOKENS, logprobs=True, top_logprobs=2
    )
    content = response.choices[0].logprobs.content
    assert [entry.token for entry in content] == [model.tokenizer.decode([e.token]) for e in reference.logprobs]
    assert [entry.logprob for entry in content] == pytest.approx([e.logprob for e in reference.logprobs])
    assert [len(entry.top_logprobs) for entry in content] == [2] * len(content)
    assert response.choices[0].message.content == chat_reference.text

    streamed = list(
        client.completions.create(model=SERVED, prompt=PROMPT, max_tokens=MAX_TOKENS, logprobs=0, stream=True)
    )
    assert "".join(chunk.choices[0].text for chunk in streamed) == completion_reference.text
    logprobs = [lp for chunk in streamed for lp in chunk.choices[0].logprobs.token_logprobs]
    assert len(logprobs) == len(completion_reference.token_ids)


def test_sdk_model_alias_and_a_clear_400(client, chat_reference):
    response = client.chat.completions.create(model="gpt-3.5-turbo", messages=MESSAGES, max_tokens=MAX_TOKENS)
    assert response.choices[0].message.content == chat_reference.text and response.model == SERVED
    assert [m.id for m in client.models.list()] == [SERVED, "gpt-3.5-turbo"]  # the alias is listed too
    with pytest.raises(BadRequestError, match="this server serves 'tiny'"):
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES, max_tokens=MAX_TOKENS)
    with pytest.raises(BadRequestError, match="names the function 'g', which is not in tools"):
        client.chat.completions.create(
            model=SERVED,
            messages=MESSAGES,
            max_tokens=MAX_TOKENS,
            tools=[{"type": "function", "function": {"name": "f"}}],
            tool_choice={"type": "function", "function": {"name": "g"}},
        )


# --- LangChain ------------------------------------------------------------------------------------
def test_langchain_chat_openai_invoke_and_stream(server, chat_reference):
    from langchain_openai import ChatOpenAI

    llm = ChatOpenAI(
        model=SERVED, base_url=server.url + "/v1", api_key="x", temperature=0, max_tokens=MAX_TOKENS, max_retries=0
    )
    messages = [("system", MESSAGES[0]["content"]), ("human", MESSAGES[1]["content"])]
    answer = llm.invoke(messages)
    assert answer.content == chat_reference.text
    assert answer.usage_metadata["output_tokens"] == len(chat_reference.token_ids)
    chunks = list(llm.stream(messages, stream_usage=True))
    assert "".join(chunk.content for chunk in chunks) == chat_reference.text
    assert sum(chunk.usage_metadata["output_tokens"] for chunk in chunks if chunk.usage_metadata) == len(
        chat_reference.token_ids
    )


def test_langchain_chat_openai_with_its_default_model_name(server, chat_reference):
    from langchain_openai import ChatOpenAI

    llm = ChatOpenAI(base_url=server.url + "/v1", api_key="x", temperature=0, max_tokens=MAX_TOKENS, max_retries=0)
    assert llm.model_name == "gpt-3.5-turbo"  # the alias the server was started with
    assert (
        llm.invoke([("system", MESSAGES[0]["content"]), ("human", MESSAGES[1]["content"])]).content
        == chat_reference.text
    )


def test_langchain_openai_invoke_stream_and_batch(server, model, completion_reference):
    from langchain_openai import OpenAI as LangChainOpenAI

    llm = LangChainOpenAI(
        model=SERVED, base_url=server.url + "/v1", api_key="x", temperature=0, max_tokens=MAX_TOKENS, max_retries=0
    )
    assert llm.invoke(PROMPT) == completion_reference.text  # sent as a list of one prompt
    assert "".join(llm.stream(PROMPT)) == completion_reference.text
    other = "The dog sleeps."
    assert llm.batch([PROMPT, other]) == [
        completion_reference.text,
        greedy(model, model.encode(other), MAX_TOKENS).text,
    ]

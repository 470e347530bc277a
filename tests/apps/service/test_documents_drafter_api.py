"""The ``documents`` drafter through the completions API: a RAG chain's own passages, sent inside the
messages, are drafted from, and every answer is the target's own greedy output (== plain decoding),
by the request field, by the server default, streamed or not, and from LangChain over real HTTP.

The served tiny model begins every chat answer with "=veda" (see ``tiny_service.GRAMMAR_TEXT``), so
a passage quoting ``GRAMMAR_TEXT`` gives drafts the target accepts.
"""

import json

import pytest
from live_server import LiveServer
from tiny_service import GRAMMAR_TEXT, SERVED, make_app, make_chat_model

from specdraft import GenerationConfig, SpeculativeGenerator
from specdraft.apps.service import ServiceConfig

MAX_TOKENS = 16
CONTEXT = f"The quick brown fox jumps over the lazy dog.\n\n{GRAMMAR_TEXT}\n\nSpeculative decoding drafts tokens."
# As LangChain's create_stuff_documents_chain sends them: the passages in the system message.
MESSAGES = [
    {
        "role": "system",
        "content": f"Use the following pieces of retrieved context to answer the question.\n\n{CONTEXT}",
    },
    {"role": "user", "content": "What does the fox do?"},
]
PROMPT = f"Context:\n\n{CONTEXT}\n\nQuestion: What does the fox do?\nAnswer:"


@pytest.fixture(scope="module")
def model(tokenizer):
    return make_chat_model(tokenizer)


@pytest.fixture(scope="module")
def client(model):
    return make_app(model).test_client()


def greedy(model, prompt_ids, max_tokens=MAX_TOKENS):
    return SpeculativeGenerator(model).generate(prompt_ids, None, GenerationConfig(max_new_tokens=max_tokens))


@pytest.fixture(scope="module")
def chat_reference(model):
    return greedy(model, model.encode_chat(MESSAGES))


def post_ok(client, path, body):
    response = client.post(path, json=body)
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()


def test_chat_drafts_from_the_passages_in_the_messages(client, chat_reference):
    body = post_ok(
        client, "/v1/chat/completions", {"messages": MESSAGES, "max_tokens": MAX_TOKENS, "drafter": "documents"}
    )
    assert body["choices"][0]["message"]["content"] == chat_reference.text
    assert body["choices"][0]["finish_reason"] == chat_reference.finish_reason
    assert body["usage"]["completion_tokens"] == len(chat_reference.token_ids)
    speculation = body["speculation"]
    assert speculation["drafter"] == "documents"
    assert speculation["accepted_tokens"] >= 1  # "=veda" quoted from the passage


def test_streamed_chat_is_the_same_answer_with_drafted_pieces(client, chat_reference):
    response = client.post(
        "/v1/chat/completions",
        json={"messages": MESSAGES, "max_tokens": MAX_TOKENS, "drafter": "documents", "stream": True},
    )
    assert response.status_code == 200 and response.mimetype == "text/event-stream"
    payloads = [event[len("data: ") :] for event in response.get_data(as_text=True).split("\n\n")[:-1]]
    assert payloads[-1] == "[DONE]"
    *pieces, final = [json.loads(p) for p in payloads[:-1]]
    assert "".join(chunk["choices"][0]["delta"].get("content", "") for chunk in pieces) == chat_reference.text
    assert "draft" in {chunk["source"] for chunk in pieces}
    assert final["speculation"]["drafter"] == "documents"


def test_reference_is_the_same_drafter_under_its_canonical_name(client, chat_reference):
    """``documents`` is an alias of the registry's ``reference``: the same drafts and answer; the
    response names the drafter as the request spelled it."""
    body = post_ok(
        client, "/v1/chat/completions", {"messages": MESSAGES, "max_tokens": MAX_TOKENS, "drafter": "reference"}
    )
    assert body["choices"][0]["message"]["content"] == chat_reference.text
    assert body["speculation"]["drafter"] == "reference" and body["speculation"]["accepted_tokens"] >= 1


def test_text_completion_drafts_from_the_prompt(client, model):
    reference = greedy(model, model.encode(PROMPT))
    body = post_ok(client, "/v1/completions", {"prompt": PROMPT, "max_tokens": MAX_TOKENS, "drafter": "documents"})
    assert body["choices"][0]["text"] == reference.text
    assert body["speculation"]["drafter"] == "documents"


@pytest.mark.parametrize("prompt", [" ", "hi", "\n\n"])
def test_a_prompt_without_passages_decodes_plainly(client, model, prompt):
    reference = greedy(model, model.encode(prompt), 4)
    body = post_ok(client, "/v1/completions", {"prompt": prompt, "max_tokens": 4, "drafter": "documents"})
    assert body["choices"][0]["text"] == reference.text


def test_the_assistants_own_messages_are_not_drafted_from(client, model):
    messages = [
        {"role": "user", "content": "Say something."},
        {"role": "assistant", "content": GRAMMAR_TEXT},  # the answer's start, but the model's own text
        {"role": "user", "content": "Again."},
    ]
    reference = greedy(model, model.encode_chat(messages))
    body = post_ok(
        client, "/v1/chat/completions", {"messages": messages, "max_tokens": MAX_TOKENS, "drafter": "documents"}
    )
    assert body["choices"][0]["message"]["content"] == reference.text
    assert body["speculation"]["drafted_tokens"] == 0


def test_documents_as_the_server_default(model, chat_reference):
    client = make_app(model, drafter="documents").test_client()
    body = post_ok(client, "/v1/chat/completions", {"messages": MESSAGES, "max_tokens": MAX_TOKENS})
    assert body["choices"][0]["message"]["content"] == chat_reference.text
    assert body["speculation"]["drafter"] == "documents"
    assert body["speculation"]["accepted_tokens"] >= 1
    body = post_ok(client, "/v1/chat/completions", {"messages": MESSAGES, "max_tokens": MAX_TOKENS, "drafter": "none"})
    assert body["choices"][0]["message"]["content"] == chat_reference.text  # a request may still choose
    assert body["speculation"]["drafted_tokens"] == 0


def test_a_langchain_rag_chain_gets_it_with_no_code_change(model):
    """LangChain's stuff-documents prompt, unchanged, against a server whose default is ``documents``."""
    from langchain_core.documents import Document
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_openai import ChatOpenAI

    documents = [Document(page_content=text) for text in CONTEXT.split("\n\n")]
    prompt = ChatPromptTemplate.from_messages(
        [
            ("system", "Use the following pieces of retrieved context to answer the question.\n\n{context}"),
            ("human", "{input}"),
        ]
    )
    values = {"context": "\n\n".join(doc.page_content for doc in documents), "input": "What does the fox do?"}
    assert [m.content for m in prompt.invoke(values).to_messages()] == [m["content"] for m in MESSAGES]
    app = make_app(model, drafter="documents")
    with LiveServer(app) as server:
        llm = ChatOpenAI(
            model=SERVED, base_url=server.url + "/v1", api_key="unused", temperature=0, max_retries=0, timeout=60
        )
        answer = (prompt | llm).invoke(values)
    reference = greedy(model, model.encode_chat(MESSAGES), ServiceConfig().default_max_tokens)
    assert answer.content == reference.text

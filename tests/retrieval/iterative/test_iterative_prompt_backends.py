"""Iterative RAG builds the same prompt, token for token, on transformers and llama.cpp (slow: the
registry's models, the transformers checkpoint and the GGUF file of each). Before the prompt went
through ``Model.encode_chat``, llama.cpp's tokenizer (no ``apply_chat_template``) got the plain
layout while transformers got the chat template's."""

from __future__ import annotations

import pytest

from specdraft.retrieval.iterative import INSTRUCTION, Collection
from specdraft.retrieval.iterative.prompt import _MARK, build_layout

pytestmark = pytest.mark.slow

QUESTIONS = [
    "How tall is the Eiffel Tower?",
    "What does the quick brown fox do with the lazy dog?",
    "def add(a, b): what does it return?  ünïcödé 日本語 🙂",
]
COLLECTION = Collection.from_texts(
    [
        "The Eiffel Tower is 330 metres tall.",
        "def add(a, b):\n    return a + b",
        "Green tea is steeped in hot water for two minutes.",
    ]
)


@pytest.fixture(scope="module", params=["qwen2.5-coder-0.5b", "smollm2-135m"])
def backends(request, real_model):
    return real_model(request.param), real_model(request.param, "llama-cpp")


def test_the_prompt_is_the_same_on_transformers_and_llama_cpp(backends):
    hf, gguf = backends
    assert hf.has_chat_template and gguf.has_chat_template
    for question in QUESTIONS:
        want = build_layout(hf, COLLECTION, question, INSTRUCTION)
        got = build_layout(gguf, COLLECTION, question, INSTRUCTION)
        assert (got.prefix_ids, got.question_ids, got.query_ids) == (want.prefix_ids, want.question_ids, want.query_ids)
        for docs in ((0,), (1, 2)):
            assert got.prompt_ids(docs, [11, 12]) == want.prompt_ids(docs, [11, 12])


def test_the_chat_prompt_on_transformers_is_the_one_it_always_was(backends):
    """The template's text cut at the documents, each side tokenized alone (the layout before)."""
    hf, _ = backends
    for question in QUESTIONS:
        text = hf.tokenizer.apply_chat_template(
            [{"role": "user", "content": f"{INSTRUCTION}\n\n{_MARK}Question: {question}"}]
        )
        head, _, tail = text.partition(_MARK)
        layout = build_layout(hf, COLLECTION, question, INSTRUCTION)
        assert layout.prefix_ids == hf.tokenizer.encode(head) and layout.question_ids == hf.tokenizer.encode(tail)

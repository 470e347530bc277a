"""Iterative RAG's prompt goes through ``Model.encode_chat``, the same on every backend: a model whose
tokenizer cannot render templates itself (llama.cpp's) gets the chat layout too, and the layout is
the one built before from the rendered text. The answer's stats use the core's names only."""

from __future__ import annotations

import copy

import pytest
from chat_checkpoint import CHAT_TEMPLATE
from iterative_fixtures import QUESTION, retrievers, salad_collection
from tiny_models import make_tiny_model

from specdraft import GenerationConfig
from specdraft.retrieval.iterative import INSTRUCTION, IterativeRAG, IterativeRAGConfig, SpeculativeRetrievalConfig
from specdraft.retrieval.iterative.prompt import _MARK, build_layout, split_at


@pytest.fixture(scope="module")
def chat_model(tokenizer):
    chat_tokenizer = copy.deepcopy(tokenizer)
    chat_tokenizer.chat_template = CHAT_TEMPLATE
    return make_tiny_model(chat_tokenizer, seed=0)


@pytest.fixture(scope="module")
def collection(tokenizer):
    return salad_collection(tokenizer)


class PlainTokenizer:
    """A tokenizer with the ``Tokenizer`` protocol only: no ``apply_chat_template`` (as llama.cpp's)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.vocab_size = inner.vocab_size

    def encode(self, text, add_special_tokens=False):
        return self.inner.encode(text, add_special_tokens)

    def decode(self, ids):
        return self.inner.decode(ids)

    def fingerprint(self):
        return self.inner.fingerprint()


class TemplateOnTheModel:
    """``model`` as a backend that renders the chat template itself (``encode_chat``) and whose
    tokenizer has no ``apply_chat_template``: what llama.cpp's ``LlamaCppModel`` is."""

    def __init__(self, model) -> None:
        self.model = model
        self.tokenizer = PlainTokenizer(model.tokenizer)
        self.has_chat_template = model.has_chat_template

    def encode(self, text):
        return self.model.encode(text)

    def encode_chat(self, messages):
        return self.model.encode_chat(messages)


def test_a_model_rendering_its_own_template_gets_the_same_chat_prompt(chat_model, collection):
    stand_in = TemplateOnTheModel(chat_model)
    for question in (QUESTION, "Why?", "  spaced   question \n"):
        want = build_layout(chat_model, collection, question, INSTRUCTION)
        got = build_layout(stand_in, collection, question, INSTRUCTION)
        assert (got.prefix_ids, got.question_ids, got.query_ids) == (want.prefix_ids, want.question_ids, want.query_ids)
        assert got.prompt_ids((2, 5), [7, 8]) == want.prompt_ids((2, 5), [7, 8])
        assert chat_model.tokenizer.decode(want.prefix_ids).startswith("<|user|>")


def test_the_chat_layout_is_the_rendered_text_cut_at_the_documents(chat_model, collection):
    """The layout built before from ``apply_chat_template``'s text (head and tail tokenized alone)."""
    tokenizer = chat_model.tokenizer
    text = tokenizer.apply_chat_template([{"role": "user", "content": f"{INSTRUCTION}\n\n{_MARK}Question: {QUESTION}"}])
    head, _, tail = text.partition(_MARK)
    layout = build_layout(chat_model, collection, QUESTION, INSTRUCTION)
    assert layout.prefix_ids == tokenizer.encode(head) and layout.question_ids == tokenizer.encode(tail)


def test_split_at_needs_exactly_one_occurrence():
    assert split_at([1, 2, 3, 4, 5], [3, 4]) == ([1, 2], [5])
    assert split_at([1, 3, 4, 3, 4], [3, 4]) is None
    assert split_at([1, 2], [3]) is None and split_at([1, 2], []) is None


@pytest.mark.parametrize("speculative", [None, SpeculativeRetrievalConfig(async_verify=False, max_strides=2)])
def test_stats_carry_the_core_names_only(tiny_model, collection, speculative):
    retriever = retrievers(collection)["bm25"]
    config = IterativeRAGConfig(stride=3, query_tokens=8, max_new_tokens=9)
    answer = IterativeRAG(tiny_model, retriever, collection, config, speculative).generate(
        QUESTION, GenerationConfig(max_new_tokens=9, ignore_eos=True)
    )
    stats = answer.to_dict()["stats"]
    old_names = {"retrieval_seconds", "retrieval_wait_seconds", "cache_seconds", "generation_seconds"}
    assert not (old_names | {"wall_seconds", "model_passes"}) & set(stats)
    assert stats["wall_s"] > 0 and stats["target_forward_passes"] >= 1 and stats["generated_tokens"] == 9

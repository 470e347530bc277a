"""Passages from a prompt (``prompt_passages``): which texts, how they split, and the documents
drafter over them, down to lossless generation (== plain decoding) on a tiny model."""

from __future__ import annotations

import copy

import pytest
from tiny_models import CORPUS, make_tiny_model

from specdraft import Draft, GenerationConfig, SpeculationConfig, SpeculativeGenerator
from specdraft.retrieval.prompt_passages import documents_drafter, prompt_passages, prompt_texts, split_passages
from specdraft.retrieval.reference_drafter import ReferenceDraftConfig, ReferenceDrafter

# Tiny random models seeded 0 begin every chat answer with "=veda" (the template's "<|assistant|>"
# decides it), so a passage that begins "=vedae" gives drafts the target accepts ("=veda") and
# rejects (the "e").
CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
QUOTED = "=vedae6 the dog sleep."


# --- texts and passages ---------------------------------------------------------------------------
def test_blank_lines_split_passages_and_blocks_are_stripped():
    text = "Context:\n\n  first passage,\nstill the first.  \n\n\n\nsecond\n \t\nthird\n"
    assert split_passages(text) == ["Context:", "first passage,\nstill the first.", "second", "third"]
    assert split_passages("one block\nover two lines") == ["one block\nover two lines"]
    assert split_passages("a\r\n\r\nb") == ["a", "b"]  # Windows line ends: "\r" is whitespace
    assert split_passages("") == [] and split_passages(" \n\n \n") == []


def test_prompt_texts_are_the_prompt_or_every_message_but_the_assistants():
    assert prompt_texts("Context: x\n\nQuestion: y", None) == ["Context: x\n\nQuestion: y"]
    assert prompt_texts(None, None) == []
    messages = [
        {"role": "system", "content": "Use the context.\n\ndoc one"},
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": "What is one?"},
        {"role": "assistant", "content": "My own earlier answer."},
        {"role": "tool", "content": "doc two"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "part a"},
                {"type": "image_url", "image_url": {}},
                {"type": "text", "text": "part b"},
            ],
        },
        {"role": "user", "content": None},
    ]
    assert prompt_texts(None, messages) == [
        "Use the context.\n\ndoc one",
        "Be brief.",
        "What is one?",
        "doc two",
        "part a",
        "part b",
    ]


def test_passages_keep_prompt_order_and_each_distinct_one_once():
    texts = ["Context:\n\ndoc A\n\ndoc B", "doc A\n\nQuestion: what?", "  doc B  "]
    assert prompt_passages(texts) == ["Context:", "doc A", "doc B", "Question: what?"]
    assert prompt_passages([]) == [] and prompt_passages(["", "\n\n"]) == []


# --- the drafter ----------------------------------------------------------------------------------
def test_no_passage_means_plain_decoding(tiny_model):
    assert documents_drafter(tiny_model.tokenizer, []) is None
    assert documents_drafter(tiny_model.tokenizer, [" \n\n "]) is None


def test_the_drafter_is_the_reference_drafter_over_the_passages(tiny_model):
    tok = tiny_model.tokenizer
    texts = ["Context:\n\n" + CORPUS[0] + "\n\n" + CORPUS[2], "Question: what does the fox do?"]
    drafter = documents_drafter(tok, texts, ReferenceDraftConfig(max_branches=2))
    assert isinstance(drafter, ReferenceDrafter) and drafter.config.max_branches == 2
    assert not drafter.config.match_prompt_tail  # answer-only matching
    prompt = tiny_model.encode("\n\n".join(texts))
    assert drafter.propose(prompt, 8) == Draft.empty()  # nothing generated yet: the prompt itself is not matched
    said = tok.encode(" The quick brown")
    passage = tok.encode(CORPUS[0])
    draft = drafter.propose(prompt + said, 6)
    assert len(draft) > 0
    assert list(draft.tokens) == passage[len(tok.encode("The quick brown")) :][: len(draft)]  # it continues the passage


def test_a_match_never_runs_past_a_passage_end(tiny_model):
    tok = tiny_model.tokenizer
    drafter = documents_drafter(tok, ["alpha beta gamma\n\ndelta epsilon"])
    drafter.propose([1, 2, 3], 8)
    gamma = tok.encode("alpha beta gamma")
    assert drafter.propose([1, 2, 3] + gamma, 8) == Draft.empty()  # "delta" is another passage


# --- lossless -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def chat_model(tokenizer):
    chat_tokenizer = copy.deepcopy(tokenizer)
    chat_tokenizer.chat_template = CHAT_TEMPLATE
    return make_tiny_model(chat_tokenizer, seed=0)


@pytest.mark.parametrize("max_new_tokens", [1, 6, 40])
@pytest.mark.parametrize("draft_len", [1, 4, 16])
def test_chat_answers_equal_plain_decoding(chat_model, max_new_tokens, draft_len):
    messages = [
        {"role": "system", "content": f"Answer from the context.\n\n{CORPUS[0]}\n\n{QUOTED}\n\n{CORPUS[1]}"},
        {"role": "user", "content": "What does the fox do?"},
    ]
    prompt = chat_model.encode_chat(messages)
    config = GenerationConfig(max_new_tokens=max_new_tokens)
    # the first step drafts (as on engine and remote targets): "=veda" is drafted there
    speculation = SpeculationConfig(
        initial_draft_len=draft_len, max_draft_len=max(draft_len, 16), adaptive=False, plain_first_step=False
    )
    plain = SpeculativeGenerator(chat_model, speculation).generate(prompt, None, config)
    drafter = documents_drafter(chat_model.tokenizer, prompt_texts(None, messages))
    result = SpeculativeGenerator(chat_model, speculation).generate(prompt, drafter, config)
    assert result.token_ids == plain.token_ids
    assert result.text == plain.text
    if max_new_tokens > 3:
        assert result.stats.accepted_tokens >= 1  # "=veda" drafted from the quoted passage and accepted
        if draft_len > 1:
            assert result.stats.drafted_tokens > result.stats.accepted_tokens  # and the passage's "e6 ..." rejected


@pytest.mark.parametrize("question", ["What does the fox do?", "Grammar correction returns", "def add"])
def test_text_prompts_equal_plain_decoding(tiny_model, question):
    prompt = f"Context:\n\n{CORPUS[0]}\n\n{CORPUS[2]}\n\n{CORPUS[3]}\n\nQuestion: {question}\nAnswer:"
    ids = tiny_model.encode(prompt)
    config = GenerationConfig(max_new_tokens=32)
    speculation = SpeculationConfig(initial_draft_len=4, adaptive=False)
    plain = SpeculativeGenerator(tiny_model, speculation).generate(ids, None, config)
    result = SpeculativeGenerator(tiny_model, speculation).generate(
        ids, documents_drafter(tiny_model.tokenizer, prompt_texts(prompt, None)), config
    )
    assert result.token_ids == plain.token_ids

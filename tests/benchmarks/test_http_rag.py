"""The HTTP RAG benchmark's harness: LangChain's messages, the rotated order, the cases from the
``rag`` questions, and a real ``specdraft serve`` subprocess on a tiny chat checkpoint answering
every drafter with the same text."""

import copy

import pytest
from hash_embedder import HashEmbedder
from tiny_models import make_tiny_model

from benchmarks import http_rag
from benchmarks.http_rag import DRAFTERS, HttpMeasurement, Server, langchain_messages, measure, rag_cases, rotated
from specdraft.apps.bench import datasets
from specdraft.apps.bench.runner import summarize

PASSAGES = [
    {
        "id": "p/fox",
        "text": "The quick brown fox jumps over the lazy dog. The dog sleeps all day.",
        "question": "What does the fox jump over?",
    },
    {
        "id": "p/code",
        "text": "def add(a, b): return a + b. The function adds two numbers.",
        "question": "What does add do?",
    },
]
CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def test_messages_are_langchains_stuff_documents_prompt():
    from langchain_core.documents import Document
    from langchain_core.prompts import ChatPromptTemplate

    docs = [Document(page_content=p["text"]) for p in PASSAGES]
    prompt = ChatPromptTemplate.from_messages([("system", http_rag.LANGCHAIN_SYSTEM), ("human", "{input}")])
    rendered = prompt.invoke({"context": "\n\n".join(d.page_content for d in docs), "input": "Why?"}).to_messages()
    ours = langchain_messages("Why?", [p["text"] for p in PASSAGES])
    assert [(m["role"], m["content"]) for m in ours] == [("system", rendered[0].content), ("user", rendered[1].content)]


def test_the_order_rotates_question_by_question():
    assert [rotated(DRAFTERS, n) for n in range(4)] == [
        ["none", "prompt-lookup", "documents"],
        ["prompt-lookup", "documents", "none"],
        ["documents", "none", "prompt-lookup"],
        ["none", "prompt-lookup", "documents"],
    ]


def test_cases_retrieve_passages_into_the_messages(monkeypatch, tmp_path):
    monkeypatch.setenv("SPECDRAFT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(datasets, "rag_passages", lambda: PASSAGES)
    monkeypatch.setattr(datasets, "rag_questions", lambda seed: list(reversed(PASSAGES)))
    cases, facts = rag_cases(limit=2, seed=0, top_k=1, embedder=HashEmbedder())
    assert [case_id for case_id, _ in cases] == ["p/code", "p/fox"]
    for (case_id, messages), record in zip(cases, reversed(PASSAGES)):
        assert messages[1] == {"role": "user", "content": record["question"]}
        assert messages[0]["content"].startswith("You are an assistant for question-answering tasks.")
    assert facts["top_k"] == 1 and facts["passages"] == 2


def test_summaries_count_the_servers_tokens():
    rows = [
        HttpMeasurement("none", "q", [], 2.0, 10, 0.0, 0.5, completion_tokens=10, text="a"),
        HttpMeasurement("documents", "q", [], 1.0, 4, 1.5, 0.5, completion_tokens=10, text="a", identical=True),
    ]
    rows[0].identical = True
    plain, documents = summarize(["none", "documents"], rows)
    assert (plain.generated_tokens, documents.generated_tokens) == (10, 10)
    assert documents.speedup == 2.0 and documents.forward_passes_per_token == 0.4 and documents.identical_rate == 1.0


@pytest.fixture(scope="module")
def chat_checkpoint(tmp_path_factory, tokenizer):
    chat_tokenizer = copy.deepcopy(tokenizer)
    chat_tokenizer.chat_template = CHAT_TEMPLATE
    model = make_tiny_model(chat_tokenizer, seed=0)
    path = tmp_path_factory.mktemp("tiny-chat")
    model.hf_model.save_pretrained(path)
    chat_tokenizer.save_pretrained(path)
    return path


@pytest.mark.slow  # a server subprocess: imports torch and transformers, loads the checkpoint (~20-50 s)
def test_a_real_server_answers_every_drafter_alike(chat_checkpoint, tmp_path):
    messages = langchain_messages("What does the fox do?", [PASSAGES[0]["text"], "=vedae6 the dog sleep."])
    serve_args = ["--model", str(chat_checkpoint), "--device", "cpu", "--dtype", "float32", "--drafter", "none"]
    with Server(serve_args, tmp_path / "server.log") as server:
        rows = {drafter: measure(server, "q", messages, drafter, 12) for drafter in DRAFTERS}
    assert len({row.text for row in rows.values()}) == 1
    assert {row.completion_tokens for row in rows.values()} == {rows["none"].completion_tokens}
    assert rows["none"].speculation["drafted_tokens"] == 0
    assert rows["documents"].speculation["drafter"] == "documents"
    assert all(row.wall_s > 0 and row.forward_passes >= 1 for row in rows.values())

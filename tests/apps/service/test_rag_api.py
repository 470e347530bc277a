"""The RAG API on a tiny chat model and hash-embedding indexes in a temporary folder."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from hash_embedder import HashEmbedder
from tiny_service import make_app, make_chat_model

from specdraft.retrieval.datastore import Datastore
from specdraft.retrieval.index import DocumentIndex

# The tiny chat model answers "=vedae6..." to anything; the "echo" passage holds those characters,
# so the reference drafter drafts runs the model accepts (shaded, linked spans).
DOCS = [
    {"id": "fox", "text": "The quick brown fox jumps over the lazy dog. The dog sleeps all day."},
    {"id": "echo", "text": "The fox answers =vedae6 to every question it is asked.", "metadata": {"lang": "fox"}},
    {"id": "tea", "text": "Green tea is steeped in hot water for two minutes."},
]
QUESTION = "What does the fox answer?"


@pytest.fixture(scope="module")
def model(tokenizer):
    return make_chat_model(tokenizer)


@pytest.fixture(scope="module")
def datastore_dir(tmp_path_factory, tokenizer):
    folder = tmp_path_factory.mktemp("datastore") / "store"
    Datastore.build([tokenizer(d["text"]).input_ids for d in DOCS], "tiny", len(tokenizer)).save(folder)
    return folder


@pytest.fixture
def root(tmp_path) -> Path:
    return tmp_path / "indexes"


@pytest.fixture
def app(model, root, datastore_dir):
    return make_app(model, embedder=HashEmbedder(), index_root=str(root), datastore=str(datastore_dir))


@pytest.fixture
def client(app):
    client = app.test_client()
    assert client.post("/v1/rag/documents", json={"documents": DOCS}).status_code == 200
    return client


def ask(client, **body) -> dict:
    response = client.post("/v1/rag/query", json={"question": QUESTION, "max_tokens": 12, **body})
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def folder_bytes(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_adding_documents_creates_the_index_on_disk(app, root):
    client = app.test_client()
    first = client.post("/v1/rag/documents", json={"index": "notes", "documents": DOCS[:2]}).get_json()
    assert first == {
        "index": "notes",
        "created": True,
        "added": {"documents": 2, "chunks": 2},
        "documents": 2,
        "chunks": 2,
    }
    second = client.post("/v1/rag/documents", json={"index": "notes", "documents": DOCS[2:]}).get_json()
    assert second["created"] is False and second["documents"] == 3
    assert DocumentIndex.load(root / "notes", HashEmbedder()).documents == 3
    assert client.get("/v1/rag/indexes").get_json()["indexes"] == ["notes"]


def test_query_contract(client):
    body = ask(client, drafter="reference", top_k=2)
    assert set(body) == {"answer", "citations", "token_ids", "stats", "passages", "spans", "index", "model", "drafter"}
    assert body["index"] == "default" and body["drafter"] == "reference" and len(body["passages"]) == 2
    assert body["answer"] == "".join(span["text"] for span in body["spans"])
    assert body["stats"]["generated_tokens"] == len(body["token_ids"]) <= 12 and body["stats"]["wall_s"] > 0


@pytest.mark.parametrize("drafter", ["reference", "documents", "datastore", "reference+datastore", "prompt-lookup"])
def test_every_drafter_gives_the_plain_answer(client, drafter):
    plain = ask(client, drafter="none")
    assert ask(client, drafter=drafter)["token_ids"] == plain["token_ids"]


@pytest.mark.parametrize("drafter", ["datastore", "reference+datastore"])
def test_completions_take_the_datastore_drafters_of_a_server_with_a_datastore(client, drafter):
    def complete(name):
        body = {"prompt": "The quick brown fox", "max_tokens": 8, "drafter": name}
        response = client.post("/v1/completions", json=body)
        assert response.status_code == 200, response.get_json()
        return response.get_json()

    answer = complete(drafter)
    assert answer["choices"][0]["text"] == complete("none")["choices"][0]["text"]
    assert answer["speculation"]["drafter"] == drafter


def test_documents_is_the_reference_drafter_under_its_alias(client):
    reference, documents = ask(client, drafter="reference"), ask(client, drafter="documents")
    assert documents["drafter"] == "documents" and documents["spans"] == reference["spans"]


def test_drafted_runs_link_to_the_passage_they_came_from(client):
    body = ask(client, drafter="reference")
    drafted = [span for span in body["spans"] if span["source"] == "draft"]
    assert drafted and body["stats"]["accepted_tokens"] > 0
    passages = {p["id"]: p["text"] for p in body["passages"]}
    for span in drafted:
        assert span["passage"] == "echo#0"
        assert passages["echo#0"][span["passage_start"] :].startswith(span["text"].strip())


def test_streaming_sends_passages_pieces_and_the_answer(client):
    whole = ask(client)
    response = client.post("/v1/rag/query", json={"question": QUESTION, "max_tokens": 12, "stream": True})
    assert response.status_code == 200 and response.mimetype == "text/event-stream"
    events = [line[len("data: ") :] for line in response.get_data(as_text=True).split("\n\n") if line]
    assert events[-1] == "[DONE]"
    payloads = [json.loads(e) for e in events[:-1]]
    assert payloads[0]["passages"] == whole["passages"]
    pieces = payloads[1:-1]
    assert all(set(p) == {"text", "source"} for p in pieces)
    assert "".join(p["text"] for p in pieces).strip() == whole["answer"]
    final = payloads[-1]["answer"]
    assert final["token_ids"] == whole["token_ids"] and final["spans"] == whole["spans"]


def test_bad_documents_write_nothing(client, root):
    before = folder_bytes(root / "default")
    bad = [{"id": "new", "text": "fine"}, {"id": "empty", "metadata": {}}]
    response = client.post("/v1/rag/documents", json={"documents": bad})
    assert response.status_code == 400
    error = response.get_json()["error"]
    assert error["param"] == "documents[1]" and "text" in error["message"]
    duplicate = client.post("/v1/rag/documents", json={"documents": [{"id": "fox", "text": "again"}]})
    assert duplicate.status_code == 400 and "fox" in duplicate.get_json()["error"]["message"]
    assert folder_bytes(root / "default") == before
    assert len(ask(client, top_k=10)["passages"]) == len(DOCS)  # the kept index is unchanged too


def test_an_index_built_with_another_embedding_model_is_refused(client, root):
    other = DocumentIndex.create(embedder=HashEmbedder(dim=64, name="other-embedder"))
    other.add(DOCS[:1])
    other.save(root / "other")
    before = folder_bytes(root / "other")
    for path, body in [
        ("/v1/rag/query", {"index": "other", "question": "fox?"}),
        ("/v1/rag/documents", {"index": "other", "documents": DOCS[2:]}),
    ]:
        response = client.post(path, json=body)
        assert response.status_code == 409, path
        error = response.get_json()["error"]
        assert error["param"] == "index" and "other-embedder" in error["message"]
    assert folder_bytes(root / "other") == before


@pytest.mark.parametrize(
    "body, status, message, param",
    [
        ({"question": "   "}, 400, "question must not be empty", "question"),
        ({}, 400, "question is required", "question"),
        ({"question": 3}, 400, "question must be a string", "question"),
        ({"question": "fox?", "index": "missing"}, 404, "no index named 'missing'", "index"),
        ({"question": "fox?", "index": "../etc"}, 400, "index must be a name", "index"),
        ({"question": "fox?", "top_k": 0}, 400, "top_k must be in [1, 10]", "top_k"),
        ({"question": "fox?", "top_k": True}, 400, "top_k must be an integer", "top_k"),
        ({"question": "fox?", "max_tokens": 10**6}, 400, "max_tokens must be in", "max_tokens"),
        ({"question": "fox?", "drafter": "magic"}, 400, "drafter must be one of", "drafter"),
        ({"question": "fox?", "stream": "yes"}, 400, "stream must be true or false", "stream"),
    ],
)
def test_bad_queries_get_a_json_error(client, body, status, message, param):
    response = client.post("/v1/rag/query", json=body)
    assert response.status_code == status
    error = response.get_json()["error"]
    assert message in error["message"] and error["param"] == param and error["type"] == "invalid_request_error"


@pytest.mark.parametrize(
    "body, message",
    [
        ({}, "documents is required"),
        ({"documents": {"id": "x", "text": "y"}}, "documents must be a list"),
        ({"documents": []}, "documents must not be empty"),
        ({"documents": [{"id": "x", "text": "y"}], "index": ".hidden"}, "index must be a name"),
        ({"documents": ["just text"]}, "documents[0]"),
    ],
)
def test_bad_document_requests_get_a_json_error(app, root, body, message):
    response = app.test_client().post("/v1/rag/documents", json=body)
    assert response.status_code == 400 and message in response.get_json()["error"]["message"]
    assert not root.exists() or not any(root.iterdir())


def test_datastore_drafters_need_a_configured_datastore(model, root):
    client = make_app(model, embedder=HashEmbedder(), index_root=str(root)).test_client()
    client.post("/v1/rag/documents", json={"documents": DOCS})
    response = client.post("/v1/rag/query", json={"question": "fox?", "drafter": "datastore"})
    assert response.status_code == 400 and "--datastore" in response.get_json()["error"]["message"]


def test_a_failed_add_does_not_disturb_concurrent_queries(client):
    expected = ask(client)["token_ids"]
    answers, errors = [], []

    def query():
        answers.append(ask(client)["token_ids"])

    def bad_add():
        errors.append(client.post("/v1/rag/documents", json={"documents": [{"id": "x", "text": ""}]}).status_code)

    threads = [threading.Thread(target=f) for f in (query, bad_add, query, bad_add)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers == [expected, expected] and errors == [400, 400]

"""The RAG API over the users' vector stores (``"store": NAME``): a query answers from a Chroma or
Qdrant collection as from the index of the same documents (plain, drafting, streamed, iterative with
speculative retrieval), and a bad store is a 4xx naming ``store`` that changes nothing."""

from __future__ import annotations

import json

import pytest
from hash_embedder import HashEmbedder
from tiny_service import make_app, make_chat_model

from specdraft.retrieval import IndexConfig
from specdraft.retrieval.stores import StoreConfig, build_store

DOCS = [
    {"id": "fox", "text": "The quick brown fox jumps over the lazy dog. The dog sleeps all day."},
    {"id": "echo", "text": "The fox answers =vedae6 to every question it is asked.", "metadata": {"lang": "fox"}},
    {"id": "tea", "text": "Green tea is steeped in hot water for two minutes."},
]
QUESTION = "What does the fox answer?"
EMBEDDER = HashEmbedder()


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    folder = tmp_path_factory.mktemp("stores")
    configs = {
        "notes": StoreConfig("chroma", path=str(folder / "chroma"), collection="notes"),
        "facts": StoreConfig("qdrant", path=str(folder / "qdrant"), collection="facts"),
        "gone": StoreConfig("chroma", path=str(folder / "chroma"), collection="gone"),
    }
    for name in ("notes", "facts"):
        build_store(configs[name], DOCS, EMBEDDER, IndexConfig()).close()
    return configs


@pytest.fixture(scope="module")
def client(tokenizer, stores, tmp_path_factory):
    app = make_app(
        make_chat_model(tokenizer),
        embedder=EMBEDDER,
        index_root=str(tmp_path_factory.mktemp("indexes")),
        stores=tuple(stores.items()),
    )
    client = app.test_client()
    assert client.post("/v1/rag/documents", json={"documents": DOCS}).status_code == 200
    yield client
    state = app.extensions["specdraft"]
    for name in ("notes", "facts"):
        state.store(name).close()  # a local Qdrant folder stays locked until its client closes


def ask(client, **body) -> dict:
    response = client.post("/v1/rag/query", json={"question": QUESTION, "max_tokens": 12, **body})
    assert response.status_code == 200, response.get_json()
    return response.get_json()


@pytest.mark.parametrize("store", ["notes", "facts"])
def test_a_store_answers_as_the_index_of_the_same_documents(client, store):
    index = ask(client, drafter="none")
    plain = ask(client, store=store, drafter="none")
    drafted = ask(client, store=store, drafter="reference")
    assert plain["store"] == store and "index" not in plain
    assert [p["id"] for p in plain["passages"]] == [p["id"] for p in index["passages"]]
    assert plain["token_ids"] == drafted["token_ids"] == index["token_ids"]
    assert drafted["stats"]["accepted_tokens"] > 0  # the reference drafter drafted from the store's passages


def test_a_streamed_store_answer_is_the_same(client):
    plain = ask(client, store="notes", drafter="none")
    response = client.post(
        "/v1/rag/query", json={"question": QUESTION, "max_tokens": 12, "store": "notes", "stream": True}
    )
    events = [json.loads(line[6:]) for line in response.get_data(as_text=True).splitlines() if line[6:7] == "{"]
    assert [p["id"] for p in events[0]["passages"]] == [p["id"] for p in plain["passages"]]
    assert events[-1]["answer"]["token_ids"] == plain["token_ids"] and events[-1]["answer"]["store"] == "notes"


@pytest.mark.parametrize("store", ["notes", "facts"])
def test_iterative_answers_over_a_store_with_speculative_retrieval_are_plain(client, store):
    plain = ask(client, store=store, iterative=True)
    speculative = ask(client, store=store, iterative=True, speculative_retrieval=True)
    assert plain["retriever"] == {"notes": "chroma", "facts": "qdrant"}[store]
    assert speculative["token_ids"] == plain["token_ids"]
    assert [r["doc_ids"] for r in speculative["retrievals"]] == [r["doc_ids"] for r in plain["retrievals"]]


@pytest.mark.parametrize(
    "body, status, param, message",
    [
        ({"store": "nope"}, 400, "store", 'store must be one of notes, facts, gone; got string "nope"'),
        ({"store": 3}, 400, "store", None),
        ({"store": "notes", "index": "default"}, 400, "store", "store and index name two sources"),
        ({"store": "notes", "iterative": True, "retriever": "bm25"}, 400, "retriever", "the store is the retriever"),
        ({"store": "gone"}, 409, "store", "store 'gone' cannot be used by this server: no collection 'gone'"),
    ],
)
def test_a_bad_store_is_refused_naming_the_field(client, body, status, param, message):
    response = client.post("/v1/rag/query", json={"question": QUESTION, "max_tokens": 4, **body})
    error = response.get_json()["error"]
    assert response.status_code == status and error["param"] == param
    if message is not None:
        assert message in error["message"]
    assert ask(client, store="notes", drafter="none")["store"] == "notes"  # nothing changed


def test_the_stores_are_listed(client):
    listed = client.get("/v1/rag/indexes").get_json()
    assert listed["stores"] == ["notes", "facts", "gone"] and listed["indexes"] == ["default"]

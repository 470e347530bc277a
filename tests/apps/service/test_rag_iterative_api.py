"""The RAG API's iterative answers (``"iterative": true``) on a tiny chat model and a hash-embedding
index: speculative retrieval == plain for every retriever, streamed events, bad combinations are
400s, a retriever failing mid-answer is a 502 naming it."""

from __future__ import annotations

import json

import pytest
from hash_embedder import HashEmbedder
from tiny_service import make_app, make_chat_model

from specdraft.apps.iterative_rag import IterativeRetrievers
from specdraft.session import SessionsUnavailableError

DOCS = [
    {"id": "fox", "text": "The quick brown fox jumps over the lazy dog. The dog sleeps all day."},
    {"id": "echo", "text": "The fox answers =vedae6 to every question it is asked."},
    {"id": "tea", "text": "Green tea is steeped in hot water for two minutes."},
    {"id": "moon", "text": "The moon circles the earth and lights the night."},
]
QUESTION = "What does the fox answer?"


@pytest.fixture(scope="module")
def model(tokenizer):
    return make_chat_model(tokenizer)


@pytest.fixture
def client(model, tmp_path):
    app = make_app(model, embedder=HashEmbedder(), index_root=str(tmp_path / "indexes"))
    client = app.test_client()
    assert client.post("/v1/rag/documents", json={"documents": DOCS}).status_code == 200
    return client


def ask(client, **body):
    return client.post("/v1/rag/query", json={"question": QUESTION, "max_tokens": 16, "iterative": True, **body})


def sse(response) -> list:
    events = [line[len("data: ") :] for line in response.get_data(as_text=True).split("\n\n") if line]
    return [e if e == "[DONE]" else json.loads(e) for e in events]


@pytest.mark.parametrize("retriever", ["dense", "hnsw", "bm25"])
def test_speculative_retrieval_gives_the_plain_answer(client, retriever):
    plain = ask(client, retriever=retriever)
    fast = ask(client, retriever=retriever, speculative_retrieval=True)
    assert plain.status_code == fast.status_code == 200, (plain.get_json(), fast.get_json())
    plain, fast = plain.get_json(), fast.get_json()
    assert fast["token_ids"] == plain["token_ids"] and fast["answer"] == plain["answer"]
    assert [r["docs"] for r in fast["retrievals"]] == [r["docs"] for r in plain["retrievals"]]
    assert (
        plain["retriever"] == retriever
        and plain["speculative_retrieval"] is False
        and fast["speculative_retrieval"] is True
    )
    assert plain["index"] == "default" and plain["model"] == "tiny"
    assert {"retrieval_s", "generation_s", "wall_s"} <= set(plain["stats"])
    assert all(r["source"] == "retriever" and r["status"] == "exact" for r in plain["retrievals"])
    assert {r["status"] for r in fast["retrievals"]} <= {"exact", "confirmed", "rolled_back"}


def test_streaming_sends_retrievals_text_and_the_answer(client):
    whole = ask(client, speculative_retrieval=True).get_json()
    response = ask(client, speculative_retrieval=True, stream=True)
    assert response.status_code == 200 and response.mimetype == "text/event-stream"
    events = sse(response)
    assert events[-1] == "[DONE]"
    records = [e["retrieval"] for e in events[:-1] if "retrieval" in e]
    pieces = [e["text"] for e in events[:-1] if "text" in e]
    assert [r["docs"] for r in records] == [r["docs"] for r in whole["retrievals"]]
    assert "retrieval" in events[0]  # the first stride's documents come before any text
    assert all(r["doc_id"].endswith("#0") and r["text"] for r in records)
    final = events[-2]["answer"]
    assert final["token_ids"] == whole["token_ids"] and "".join(pieces) == final["answer"]


@pytest.mark.parametrize(
    "body, param",
    [
        ({"iterative": True, "drafter": "reference"}, "drafter"),
        ({"iterative": True, "top_k": 2}, "top_k"),
        ({"iterative": True, "retriever": "ivf"}, "retriever"),
        ({"iterative": True, "speculative_retrieval": "yes"}, "speculative_retrieval"),
        ({"iterative": "true"}, "iterative"),
        ({"retriever": "bm25"}, "retriever"),
        ({"iterative": False, "speculative_retrieval": True}, "speculative_retrieval"),
    ],
)
def test_bad_combinations_are_400(client, body, param):
    response = client.post("/v1/rag/query", json={"question": QUESTION, **body})
    assert response.status_code == 400
    error = response.get_json()["error"]
    assert error["param"] == param and error["type"] == "invalid_request_error"


class EngineStandIn:
    """A served model that verifies on a serving engine: no KV cache of its own here."""

    name = "tiny"
    backend = "engine"

    def new_session(self):
        raise SessionsUnavailableError("a serving engine keeps no session here")


def test_iterative_on_a_model_without_a_session_is_a_400_naming_iterative(tmp_path):
    app = make_app(EngineStandIn(), embedder=HashEmbedder(), index_root=str(tmp_path / "indexes"))
    client = app.test_client()
    assert client.post("/v1/rag/documents", json={"documents": DOCS}).status_code == 200
    response = ask(client)
    assert response.status_code == 400
    error = response.get_json()["error"]
    assert error["param"] == "iterative" and "serving engine" in error["message"]


def test_an_unknown_index_is_404(client):
    response = ask(client, index="nope")
    assert response.status_code == 404


class FailingRetriever:
    """The real retriever until its ``fail_at``-th search, then an error."""

    def __init__(self, inner, fail_at: int) -> None:
        self.inner, self.fail_at, self.calls = inner, fail_at, 0
        self.name = "flaky"

    def search(self, queries, k):
        self.calls += 1
        if self.calls >= self.fail_at:
            raise TimeoutError("the search took too long")
        return self.inner.search(queries, k)

    def score(self, query, docs):
        return self.inner.score(query, docs)


@pytest.mark.parametrize("speculative", [False, True])
def test_a_retriever_failing_mid_answer_is_a_502_naming_it(client, monkeypatch, speculative):
    real_get = IterativeRetrievers.get
    monkeypatch.setattr(
        IterativeRetrievers,
        "get",
        lambda self, index, kind: (FailingRetriever(real_get(self, index, kind)[0], 2), real_get(self, index, kind)[1]),
    )
    response = ask(client, speculative_retrieval=speculative)
    assert response.status_code == 502
    error = response.get_json()["error"]
    assert "flaky" in error["message"] and "took too long" in error["message"] and error["type"] == "server_error"
    events = sse(ask(client, speculative_retrieval=speculative, stream=True))
    assert "error" in events[-1] and "flaky" in events[-1]["error"]["message"]
    assert "[DONE]" not in events


@pytest.mark.parametrize("speculative", [False, True])
def test_documents_added_mid_answer_do_not_mix_into_it(client, speculative):
    """An iterative answer keeps the index version it started with: documents added while it streams
    (one of them the best match for its question) change neither its retrievals nor its tokens; the
    next question sees them."""
    before = ask(client, speculative_retrieval=speculative).get_json()
    response = client.post(
        "/v1/rag/query",
        json={
            "question": QUESTION,
            "max_tokens": 16,
            "iterative": True,
            "speculative_retrieval": speculative,
            "stream": True,
        },
        buffered=False,
    )
    chunks = iter(response.response)
    first = next(chunks)  # the answer is under way
    lure = {"id": "lure", "text": "What does the fox answer? The fox answers what does the fox answer."}
    assert client.post("/v1/rag/documents", json={"documents": [lure]}).status_code == 200
    events = sse_text(first + b"".join(chunks))
    final = events[-2]["answer"]
    records = [e["retrieval"] for e in events[:-1] if "retrieval" in e]
    assert final["token_ids"] == before["token_ids"]
    assert [r["docs"] for r in records] == [r["docs"] for r in before["retrievals"]]
    assert not any(r["doc_id"].startswith("lure#") for r in records)
    after = ask(client, speculative_retrieval=speculative).get_json()
    assert (
        any(r["docs"] != b["docs"] for r, b in zip(after["retrievals"], before["retrievals"]))
        or len(after["retrievals"]) != len(before["retrievals"])
        or after["token_ids"] != before["token_ids"]
    )


def sse_text(data: bytes) -> list:
    events = [line[len("data: ") :] for line in data.decode().split("\n\n") if line]
    return [e if e == "[DONE]" else json.loads(e) for e in events]


def test_speculative_answers_over_one_index_share_one_os3_scheduler(client, model, monkeypatch):
    """Two speculative requests over one index version are scheduled by one OS^3 scheduler whose
    observations grow across them (answers unchanged); new documents (a new index version, so a new
    retriever) get a fresh scheduler; plain answers take none."""
    from specdraft.apps.iterative_rag import SharedScheduler
    from specdraft.retrieval.iterative import SpeculativeRetrievalConfig
    from specdraft.retrieval.iterative.speculative import os3_config

    served: list = []  # the real retrievers the requests got, in order
    real_get = IterativeRetrievers.get

    def spy(self, index, kind):
        retriever, collection = real_get(self, index, kind)
        served.append(retriever)
        return retriever, collection

    monkeypatch.setattr(IterativeRetrievers, "get", spy)
    config = os3_config(SpeculativeRetrievalConfig())
    plain = ask(client).get_json()
    schedulers = client.application.extensions["specdraft_iterative_retrievers"].schedulers  # the app's
    assert schedulers.find(served[0], model, config) is None  # plain iterative RAG schedules nothing
    first = ask(client, speculative_retrieval=True).get_json()
    scheduler = schedulers.find(served[1], model, config)
    assert isinstance(scheduler, SharedScheduler) and scheduler.answers == 1 and scheduler.observations > 0
    seen = scheduler.observations
    second = ask(client, speculative_retrieval=True).get_json()
    assert served[2] is served[1] and schedulers.find(served[2], model, config) is scheduler
    assert scheduler.answers == 2 and scheduler.observations > seen
    assert first["token_ids"] == second["token_ids"] == plain["token_ids"]
    assert [r["docs"] for r in second["retrievals"]] == [r["docs"] for r in plain["retrievals"]]

    more = {"id": "rain", "text": "Rain falls on the hills in spring and the rivers rise."}
    assert client.post("/v1/rag/documents", json={"documents": [more]}).status_code == 200
    ask(client, speculative_retrieval=True)
    assert served[3] is not served[1]  # the new index version has its own retriever ...
    fresh = schedulers.find(served[3], model, config)
    assert fresh is not None and fresh is not scheduler and fresh.answers == 1  # ... and its own scheduler
    assert scheduler.answers == 2  # the old one served nothing more


def test_stats_use_the_core_names(client):
    """``wall_s`` as every other route says it, and only the core's names."""
    stats = ask(client).get_json()["stats"]
    for new, old in (
        ("wall_s", "wall_seconds"),
        ("retrieval_s", "retrieval_seconds"),
        ("generation_s", "generation_seconds"),
        ("retrieval_wait_s", "retrieval_wait_seconds"),
        ("cache_s", "cache_seconds"),
        ("target_forward_passes", "model_passes"),
    ):
        assert new in stats and old not in stats, new

"""Real responses of the app (the test client) against the OpenAPI document's response schemas:
every kind of answer, errors included, and every streamed event with its JSON payload."""

from __future__ import annotations

import json

import jsonschema_rs
import pytest
from hash_embedder import HashEmbedder
from openapi_support import DOC, FULL_BODIES, example
from tiny_service import GRAMMAR_TEXT, make_app, make_chat_model


@pytest.fixture(scope="module")
def model(tokenizer):
    return make_chat_model(tokenizer)


def response_validator(name: str):
    return jsonschema_rs.validator_for({"$ref": f"#/components/schemas/{name}", "components": DOC["components"]})


@pytest.fixture(scope="module")
def client(model, tmp_path_factory):
    app = make_app(model, embedder=HashEmbedder(), index_root=str(tmp_path_factory.mktemp("openapi")))
    return app.test_client()


def _events(response) -> list[dict]:
    # each event's data (after the "event:" line the Responses API's events have)
    return [{"data": e.split("data: ", 1)[1]} for e in response.get_data(as_text=True).split("\n\n")[:-1]]


def test_real_answers_match_the_documented_responses(client):
    answers = [
        ("Health", client.get("/healthz")),
        ("Models", client.get("/v1/models")),
        ("Completion", client.post("/v1/completions", json={"prompt": "hi", "max_tokens": 3})),
        (
            "ChatCompletion",
            client.post(
                "/v1/chat/completions", json={**FULL_BODIES["/v1/chat/completions"], "stream": False, "drafter": "none"}
            ),
        ),
        (
            "Response",
            client.post("/v1/responses", json={**FULL_BODIES["/v1/responses"], "stream": False, "drafter": "none"}),
        ),
        ("Grammar", client.post("/v1/grammar/correct", json={"text": GRAMMAR_TEXT, "compare": True})),
        ("DocumentsAdded", client.post("/v1/rag/documents", json=example("/v1/rag/documents"))),
        ("Answer", client.post("/v1/rag/query", json={**example("/v1/rag/query"), "max_tokens": 3})),
        ("Indexes", client.get("/v1/rag/indexes")),
        ("Error", client.post("/v1/completions", json={"prompt": 1})),
        ("Error", client.post("/v1/rag/query", json={"question": "q", "index": "missing"})),
        ("Error", client.get("/no/such/route")),
    ]
    for name, response in answers:
        assert response.is_json, (name, response.status_code)
        errors = [e.message for e in response_validator(name).iter_errors(response.get_json())]
        assert not errors, (name, response.get_json(), errors)


def test_streamed_events_match_the_documented_events(client):
    for name, path, body in [
        ("CompletionEvent", "/v1/completions", {"prompt": "hi", "max_tokens": 3, "stream": True}),
        (
            "ChatCompletionEvent",
            "/v1/chat/completions",
            {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3, "stream": True},
        ),
        ("AnswerEvent", "/v1/rag/query", {**example("/v1/rag/query"), "max_tokens": 3, "stream": True}),
        ("ResponseEvent", "/v1/responses", {"input": "hi", "max_output_tokens": 3, "stream": True}),
    ]:
        if path == "/v1/rag/query":
            client.post(
                "/v1/rag/documents",
                json={"index": "streamed", "documents": [{"id": "x", "text": "The Eiffel Tower is tall."}]},
            )
            body["index"] = "streamed"
        events = _events(client.post(path, json=body))
        assert events[-1] == {"data": "[DONE]"}
        validator = response_validator(name)
        for event in events:
            assert validator.is_valid(event), (name, event)
            if event["data"] != "[DONE]":  # the JSON payload itself, which the event's contentSchema describes
                payload_schema = DOC["components"]["schemas"][name]["properties"]["data"]["anyOf"][1]["contentSchema"]
                payload = json.loads(event["data"])
                assert jsonschema_rs.validator_for({**payload_schema, "components": DOC["components"]}).is_valid(
                    payload
                ), (name, payload)

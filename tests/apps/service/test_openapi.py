"""``GET /openapi.json`` against the code it documents, so that the two cannot drift apart.

- Every route of the app's URL map is documented, with its methods, and nothing else is.
- The document is valid OpenAPI 3.1, and its bounds follow the app's ``ServiceConfig``.
- Request schemas against the validators (``test_openapi_requests.py``): every field a validator
  reads is documented; every example and every body generated from a schema (schemathesis, positive
  mode) is accepted; a value at each documented bound is accepted and one past it refused, naming
  the field.
- Real responses (the test client) match the documented response schemas (``test_openapi_responses.py``).

What they share (the document, the validators, full request bodies) is in ``openapi_support.py``.
"""

from __future__ import annotations

import json
import re

import pytest
import schemathesis
from openapi_support import DOC, VALIDATORS, request_schema
from tiny_service import make_app, make_chat_model

from specdraft.apps.service import openapi
from specdraft.apps.service.protocol.openai_fields import MAX_SEED, MAX_STOP_STRINGS, MAX_TEMPERATURE
from specdraft.apps.service.protocol.rag import MAX_QUESTION_CHARS


@pytest.fixture(scope="module")
def model(tokenizer):
    return make_chat_model(tokenizer)


# --- routes ---------------------------------------------------------------------------------------
def test_every_route_of_the_app_is_documented_and_nothing_else(model, tmp_path):
    app = make_app(model, index_root=str(tmp_path))
    served = {}
    for rule in app.url_map.iter_rules():
        path = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", rule.rule)
        served.setdefault(path, set()).update(m.lower() for m in rule.methods - {"HEAD", "OPTIONS"})
    documented = {path: set(item) for path, item in DOC["paths"].items()}
    assert documented == served
    assert set(VALIDATORS) == {path for path, item in DOC["paths"].items() if "requestBody" in item.get("post", {})}


def test_the_document_is_valid_openapi_3_1_and_served_as_built():
    schemathesis.openapi.from_dict(DOC).validate()
    assert DOC["openapi"].startswith("3.1")
    json.dumps(DOC)  # plain JSON


def test_the_served_document_is_built_from_the_apps_config(model, tmp_path):
    limits = dict(
        max_tokens_limit=7,
        default_max_tokens=5,
        max_grammar_chars=33,
        max_rag_top_k=4,
        rag_top_k=2,
        max_rag_documents=9,
    )
    app = make_app(model, index_root=str(tmp_path), **limits)
    served = app.test_client().get("/openapi.json").get_json()
    assert served == openapi.document(app.extensions["specdraft"].config)
    props = {path: served["components"]["schemas"][name]["properties"] for path, (name, _) in VALIDATORS.items()}
    assert props["/v1/completions"]["max_tokens"]["maximum"] == props["/v1/rag/query"]["max_tokens"]["maximum"] == 7
    assert props["/v1/grammar/correct"]["text"]["maxLength"] == 33
    assert props["/v1/rag/query"]["top_k"]["maximum"] == 4
    assert props["/v1/rag/documents"]["documents"]["maxItems"] == 9


def test_the_validators_constants_are_the_documented_bounds():
    chat = request_schema("/v1/chat/completions")["properties"]
    assert chat["temperature"]["maximum"] == MAX_TEMPERATURE
    assert chat["seed"]["maximum"] == MAX_SEED
    assert chat["stop"]["anyOf"][1]["maxItems"] == MAX_STOP_STRINGS
    assert request_schema("/v1/rag/query")["properties"]["question"]["maxLength"] == MAX_QUESTION_CHARS

"""``GET /openapi.json`` against the code it documents, so that the two cannot drift apart.

- Every route of the app's URL map is documented, with its methods, and nothing else is.
- The document is valid OpenAPI 3.1, and its bounds follow the app's ``ServiceConfig``.
- Request schemas against the validators: every field a validator reads is documented; every
  example and every body generated from a schema (schemathesis, positive mode) is accepted; a value
  at each documented bound is accepted and one past it refused, naming the field.
- Real responses (the test client) match the documented response schemas.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Callable

import jsonschema_rs
import pytest
import schemathesis
from hash_embedder import HashEmbedder
from hypothesis import HealthCheck, assume, given, settings
from tiny_service import DRAFT, GRAMMAR_TEXT, SERVED, UNLOADABLE, make_app, make_chat_model

from specdraft.apps.service import ServiceConfig, openapi
from specdraft.apps.service.protocol.completions import parse_completion_request
from specdraft.apps.service.protocol.errors import RequestError
from specdraft.apps.service.protocol.grammar import parse_grammar_request
from specdraft.apps.service.protocol.openai_fields import MAX_CHOICES, MAX_SEED, MAX_STOP_STRINGS, MAX_TEMPERATURE
from specdraft.apps.service.protocol.openai_responses_request import ResponsesBody, to_chat
from specdraft.apps.service.protocol.rag import MAX_QUESTION_CHARS, parse_documents_request, parse_query_request
from specdraft.apps.service.protocol.types import NOT_BLANK
from specdraft.apps.service.responses_api import parse_responses_request
from specdraft.retrieval.chunker import validate_documents

CONFIG = ServiceConfig(model=SERVED, grammar_model=SERVED, extra_models=(DRAFT, UNLOADABLE), index_root="unused")
DOC = openapi.document(CONFIG)


def _documents(body, config):
    request = parse_documents_request(body, config)
    validate_documents(request.documents, set())  # what DocumentIndex.add checks before anything is embedded
    return request


# The validator of each request body: (schema component, validator(body, config)).
VALIDATORS: dict[str, tuple[str, Callable[[Any, ServiceConfig], Any]]] = {
    "/v1/completions": ("CompletionRequest", lambda body, config: parse_completion_request(body, False, config)),
    "/v1/chat/completions": (
        "ChatCompletionRequest",
        lambda body, config: parse_completion_request(body, True, config),
    ),
    "/v1/responses": ("ResponsesRequest", parse_responses_request),
    "/v1/grammar/correct": ("GrammarRequest", parse_grammar_request),
    "/v1/rag/documents": ("DocumentsRequest", _documents),
    "/v1/rag/query": ("QueryRequest", parse_query_request),
}
REFUSED = (RequestError, ValueError)  # RequestError (400/413), InvalidDocumentError (a ValueError: 400)


def request_schema(path: str, doc: dict = DOC) -> dict:
    return doc["components"]["schemas"][VALIDATORS[path][0]]


def example(path: str) -> dict:
    return request_schema(path)["examples"][0]


def validate(path: str, body: dict, config: ServiceConfig = CONFIG):
    return VALIDATORS[path][1](body, config)


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


# --- request schemas against the validators -------------------------------------------------------
def test_not_blank_means_what_str_strip_means():
    pattern = re.compile(NOT_BLANK)
    for code in range(0x10000):
        if not 0xD800 <= code < 0xE000:  # lone surrogates never reach a validator
            assert (pattern.search(chr(code)) is None) == (chr(code).strip() == ""), hex(code)


class Recorded(dict):
    """A JSON object that records the fields a validator reads (``prefix.name``; ``[]`` for list items)."""

    def __init__(self, data: dict, reads: set[str], prefix: str = "") -> None:
        super().__init__({k: _recorded(v, reads, f"{prefix}{k}") for k, v in data.items()})
        self._reads, self._prefix = reads, prefix

    def _read(self, key: Any) -> None:
        self._reads.add(f"{self._prefix}{key}")

    def get(self, key, default=None):
        self._read(key)
        return super().get(key, default)

    def __getitem__(self, key):
        self._read(key)
        return super().__getitem__(key)

    def __contains__(self, key):
        self._read(key)
        return super().__contains__(key)


def _recorded(value: Any, reads: set[str], path: str) -> Any:
    if isinstance(value, dict):
        return Recorded(value, reads, f"{path}.")
    if isinstance(value, list):
        return [_recorded(item, reads, f"{path}[]") for item in value]
    return value


def documented_fields(schema: dict, path: str = "") -> set[str]:
    """Every field path a schema names (``a.b``, ``a[].b``); a free-form object admits any below it (``a.*``)."""
    fields: set[str] = set()
    for branch in schema.get("anyOf", []):
        fields |= documented_fields(branch, path)
    if "items" in schema:
        fields |= documented_fields(schema["items"], f"{path}[]")
    for name, sub in schema.get("properties", {}).items():
        child = f"{path}.{name}" if path else name
        fields |= {child} | documented_fields(sub, child)
    if schema.get("type") in ("object", ["object", "null"]) and "properties" not in schema and path:
        fields.add(f"{path}.*")
    return fields


def _is_documented(read: str, documented: set[str]) -> bool:
    parts = read.split(".")
    return read in documented or any(".".join(parts[:i]) + ".*" in documented for i in range(1, len(parts)))


NEUTRAL = {  # the refused OpenAI fields, each with a value that passes
    "tools": [],
    "functions": None,
    "tool_choice": "none",
    "function_call": "auto",
    "response_format": {"type": "text"},
    "presence_penalty": 0,
    "frequency_penalty": 0.0,
    "logit_bias": {},
    "echo": False,
    "best_of": 1,
    "suffix": "",
    "audio": None,
    "modalities": ["text"],
}
TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "d",
        "strict": True,
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
TOOL_HISTORY = [  # a call and its result
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}],
    },
    {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "sunny"}]},
]
SAMPLING = {
    "model": SERVED,
    "max_tokens": 2,
    "n": 2,
    "temperature": 0.5,
    "top_p": 0.9,
    "top_k": 5,
    "seed": 1,
    "stream": True,
    "stream_options": {"include_usage": True},
    "prediction": {"type": "content", "content": [{"type": "text", "text": "hi"}]},
}
FULL_BODIES = {  # fields set so that every branch of a validator reads its fields
    "/v1/completions": {
        "prompt": ["hi", [1, 2]],
        **SAMPLING,
        "stop": ["x"],
        "drafter": "none",
        "logprobs": 2,
        **NEUTRAL,
    },
    "/v1/chat/completions": {
        "messages": [
            {"role": "developer", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "hi"}], "name": "me"},
            *TOOL_HISTORY,
        ],
        **SAMPLING,
        "stop": "x",
        "drafter": f"model:{DRAFT}",
        "logprobs": True,
        "top_logprobs": 3,
        **NEUTRAL,
        "tools": [TOOL],
        "parallel_tool_calls": False,  # tool_choice "none": the answer follows response_format
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "answer", "description": "d", "strict": True, "schema": {"type": "object"}},
        },
    },
    "/v1/responses": {
        "model": SERVED,
        "input": [
            {"role": "developer", "content": "Be brief."},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
        ],
        "instructions": "Be brief.",
        "tools": [{"type": "function", **TOOL["function"]}],
        "tool_choice": "none",
        "parallel_tool_calls": False,
        "text": {"format": {"type": "json_schema", "name": "answer", "schema": {"type": "object"}, "strict": True}},
        "max_output_tokens": 2,
        "temperature": 0.5,
        "top_p": 0.9,
        "top_k": 5,
        "seed": 1,
        "stream": True,
        "store": False,
        "drafter": "none",
        "background": False,
        "conversation": None,
    },
    "/v1/grammar/correct": {"text": "a text", "model": SERVED, "speculate": False, "compare": True},
    "/v1/rag/documents": {"index": "notes", "documents": [{"id": "a", "text": "b", "metadata": {"k": {"nested": 1}}}]},
    "/v1/rag/query": {
        "index": "notes",
        "question": "why?",
        "top_k": 2,
        "drafter": "reference",
        "max_tokens": 3,
        "stream": True,
    },
}


@pytest.mark.parametrize("path", VALIDATORS)
def test_every_field_a_validator_reads_is_documented(path):
    documented = documented_fields(request_schema(path))
    for body in (FULL_BODIES[path], example(path)):
        reads: set[str] = set()
        validate(path, Recorded(body, reads))
        undocumented = {read for read in reads if not _is_documented(read, documented)}
        assert not undocumented, f"{path} reads {sorted(undocumented)}, which the OpenAPI document does not name"
    assert {field for field in FULL_BODIES[path]} <= documented


@pytest.mark.parametrize("path", VALIDATORS)
def test_the_documented_examples_and_full_bodies_are_accepted(path):
    schema = request_schema(path)
    for body in (example(path), FULL_BODIES[path]):
        assert jsonschema_rs.validator_for(schema).is_valid(body), body
        validate(path, body)


def _bound_cases(schema: dict, base: dict) -> list[tuple[str, Any, bool]]:
    """(field, value, accepted) for each top-level field's documented bounds: at the bound, and one past it."""
    cases = []
    for name, sub in schema["properties"].items():
        sub = sub.get("anyOf", [sub])[0] if "anyOf" in sub else sub
        if "maximum" in sub:
            high = sub["maximum"]
            cases += [
                (name, high, True),
                (name, high + 1 if isinstance(high, int) else math.nextafter(high, math.inf), False),
            ]
        if "minimum" in sub:
            low = sub["minimum"]
            cases += [
                (name, low, True),
                (name, low - 1 if isinstance(low, int) else math.nextafter(low, -math.inf), False),
            ]
        if "exclusiveMinimum" in sub:
            cases.append((name, sub["exclusiveMinimum"], False))
        if "maxLength" in sub:
            cases += [(name, "x" * sub["maxLength"], True), (name, "x" * (sub["maxLength"] + 1), False)]
        if sub.get("minLength") == 1:
            cases.append((name, "", False))
        if sub.get("pattern") == NOT_BLANK:
            cases.append((name, " \n\t", False))
        if "enum" in sub:
            cases += [(name, value, True) for value in sub["enum"] if value is not None]
            cases.append((name, "not-one-of-them", False))
        if "maxItems" in sub:
            item = base[name][0] if isinstance(base.get(name), list) else "x"
            cases.append((name, [item] * (sub["maxItems"] + 1), False))
        if sub.get("minItems") == 1:
            cases.append((name, [], False))
        if sub.get("type") in ("boolean", ["boolean", "null"]):
            cases.append((name, 1, False))
    return cases


@pytest.mark.parametrize("path", VALIDATORS)
def test_a_value_at_each_documented_bound_is_accepted_and_one_past_it_refused(path):
    schema, base = request_schema(path), FULL_BODIES[path]
    cases = _bound_cases(schema, base)
    assert cases
    for name, value, accepted in cases:
        body = {**base, name: value}
        if name == "max_completion_tokens":  # one token limit at a time
            body.pop("max_tokens")
        if path == "/v1/rag/query" and name in ITERATIVE_ONLY:  # an iterative question takes no drafter or top_k
            body = {**{k: v for k, v in body.items() if k not in NOT_ITERATIVE}, "iterative": True}
        if accepted:
            validate(path, body)
        else:
            with pytest.raises(REFUSED) as refused:
                validate(path, body)
            param = getattr(refused.value, "param", None)
            assert param is None or param.startswith(name) or param.startswith("documents["), (name, value, param)


API = schemathesis.openapi.from_dict(DOC)


def integral_floats_as_integers(value: Any) -> Any:
    """``value`` with every float that has an integral value as an int. To JSON Schema ``1.0`` is an
    integer; to this server, as to OpenAI's, it is a decimal number, refused where an integer is due
    (a 400 that says so). JSON Schema cannot tell the two apart, so generated bodies are sent as
    clients write integers."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: integral_floats_as_integers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [integral_floats_as_integers(v) for v in value]
    return value


ITERATIVE_ONLY = {"retriever", "speculative_retrieval"}
NOT_ITERATIVE = {"drafter", "top_k"}


def follows_the_rules_across_fields(path: str, body: dict) -> bool:
    """The rules JSON Schema cannot state (the documents say them in words)."""
    if path == "/v1/rag/documents":  # ids unique within the request
        ids = [document["id"] for document in body["documents"]]
        return len(set(ids)) == len(ids)
    if path == "/v1/rag/query":  # iterative answers take no drafter or top_k; only they take a retriever
        iterative = body.get("iterative") is True
        given = {name for name, value in body.items() if value is not None}
        return not (given & (NOT_ITERATIVE if iterative else ITERATIVE_ONLY))
    if path == "/v1/chat/completions" and not follows_the_tool_rules(body):
        return False
    if path == "/v1/responses":  # no stored response to continue; the tool rules of the chat request it becomes
        if body.get("previous_response_id") is not None:
            return False
        try:
            return follows_the_tool_rules(to_chat(ResponsesBody.parse(body, CONFIG)).body)
        except RequestError:
            return True  # refused for its shape: the check that follows fails, as it should
    if path in ("/v1/completions", "/v1/chat/completions"):
        limits = {body.get("max_tokens"), body.get("max_completion_tokens")} - {None}
        prompt = body.get("prompt")
        prompts = len(prompt) if isinstance(prompt, list) and not all(isinstance(t, int) for t in prompt) else 1
        return len(limits) <= 1 and prompts * (body.get("n") or 1) <= MAX_CHOICES
    return True


def follows_the_tool_rules(body: dict) -> bool:
    """Tool names unique; a named tool_choice one of them; "required" or a named one with tools; a
    tool message answering an earlier call; a call's arguments a JSON object's text."""
    names = [tool["function"]["name"] for tool in body.get("tools") or []]
    choice = body.get("tool_choice")
    if len(set(names)) != len(names) or (choice == "required" and not names):
        return False
    if isinstance(choice, dict) and choice["function"]["name"] not in names:
        return False
    called: set[str] = set()
    for message in body["messages"]:
        for call in message.get("tool_calls") or []:
            called.add(call["id"])
            try:
                if not isinstance(json.loads(call["function"]["arguments"]), dict):
                    return False
            except ValueError:
                return False
        if message["role"] == "tool" and message["tool_call_id"] not in called:
            return False
    return True


@pytest.mark.parametrize("path", VALIDATORS)
def test_bodies_valid_per_the_document_are_accepted_by_the_validators(path):
    operation = API[path]["POST"]

    @settings(max_examples=60, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(operation.as_strategy())
    def check(case):
        body = integral_floats_as_integers(case.body)
        assume(follows_the_rules_across_fields(path, body))
        validate(path, body)

    check()


# --- responses ------------------------------------------------------------------------------------
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

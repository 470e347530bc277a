"""The OpenAPI document's request schemas against the validators they document (``test_openapi.py``
has the routes and the document itself): every field a validator reads is documented; every example
and every body generated from a schema (schemathesis, positive mode) is accepted; a value at each
documented bound is accepted and one past it refused, naming the field."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import jsonschema_rs
import pytest
import schemathesis
from hypothesis import HealthCheck, assume, given, settings
from openapi_support import CONFIG, DOC, FULL_BODIES, REFUSED, VALIDATORS, example, request_schema, validate

from specdraft.apps.service.protocol.errors import RequestError
from specdraft.apps.service.protocol.openai_fields import MAX_CHOICES
from specdraft.apps.service.protocol.openai_responses_request import ResponsesBody, to_chat
from specdraft.apps.service.protocol.types import NOT_BLANK


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

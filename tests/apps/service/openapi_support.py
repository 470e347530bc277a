"""What the OpenAPI tests share (``test_openapi.py``, ``test_openapi_requests.py``,
``test_openapi_responses.py``): the document built for a test ``ServiceConfig`` (``DOC``), the
validator of each request body (``VALIDATORS``) and, per path, a body that sets every field a
validator reads (``FULL_BODIES``)."""

from __future__ import annotations

from typing import Any, Callable

from tiny_service import DRAFT, SERVED, UNLOADABLE

from specdraft.apps.service import ServiceConfig, openapi
from specdraft.apps.service.protocol.completions import parse_completion_request
from specdraft.apps.service.protocol.errors import RequestError
from specdraft.apps.service.protocol.grammar import parse_grammar_request
from specdraft.apps.service.protocol.rag import parse_documents_request, parse_query_request
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

"""JSON Schemas (2020-12, as OpenAPI 3.1 uses them) of the service's request bodies: the shared
building blocks, and the grammar and RAG requests (the completion requests: ``openapi_completions``;
the answers: ``openapi_responses``).

Each request schema is built from the same constants and ``ServiceConfig`` fields the validators
check (``validation``, ``rag_validation``, ``grammar_validation``), so a bound changes in one place;
``tests/apps/service/test_openapi.py`` checks the schemas against the validators themselves (every
field a validator reads is here, bodies valid here are accepted there, one past each bound is
refused there). The conventions of the validators hold: ``null`` counts as absent for every
optional field (so every optional field admits ``null``), and fields a schema does not name are
ignored. Request schemas are self-contained (no ``$ref``), so each can be used on its own.
"""

from __future__ import annotations

from typing import Any

from specdraft.retrieval.pipeline import DRAFTERS

from .config import ServiceConfig
from .grammar_validation import grammar_models
from .rag_indexes import NAME as INDEX_NAME
from .rag_validation import DEFAULT_INDEX, ITERATIVE_RETRIEVERS, MAX_QUESTION_CHARS

Schema = dict[str, Any]


def _not_blank() -> str:
    """A pattern that a string matches when ``str.strip()`` leaves something of it: one character
    that is not Python's whitespace (which differs from a regex's ``\\s``: U+001C-U+001F and U+0085
    are whitespace to Python, U+FEFF is not)."""
    spaces = [c for c in range(0x10000) if chr(c).isspace()]  # all of Python's whitespace is in the BMP
    ranges, start = [], spaces[0]
    for previous, c in zip(spaces, spaces[1:] + [-1]):
        if c != previous + 1:
            ranges.append(f"\\u{start:04x}" + (f"-\\u{previous:04x}" if previous > start else ""))
            start = c
    return f"[^{''.join(ranges)}]"


NOT_BLANK = _not_blank()  # a string holding something other than whitespace


def optional(schema: Schema) -> Schema:
    """``schema``, or ``null`` (which the service reads as "absent")."""
    if "enum" in schema:
        return {**schema, "enum": [*schema["enum"], None]}
    if schema.get("type") == "null":
        return schema
    if isinstance(schema.get("type"), str):
        return {**schema, "type": [schema["type"], "null"]}
    if "anyOf" in schema:
        return {**schema, "anyOf": [*schema["anyOf"], {"type": "null"}]}
    return {"anyOf": [schema, {"type": "null"}], **{k: v for k, v in schema.items() if k == "description"}}


def obj(properties: dict[str, Schema], required: tuple[str, ...] = (), description: str | None = None, example: dict | None = None) -> Schema:
    """An object with ``properties`` (the ones not ``required`` may be absent or null)."""
    schema: Schema = {
        "type": "object",
        "properties": {name: s if name in required else optional(s) for name, s in properties.items()},
    }
    if required:
        schema["required"] = list(required)
    if description:
        schema["description"] = description
    if example is not None:
        schema["examples"] = [example]
    return schema


def integer(low: int, high: int | None = None, description: str = "") -> Schema:
    schema: Schema = {"type": "integer", "minimum": low}
    if high is not None:
        schema["maximum"] = high
    return {**schema, "description": description} if description else schema


def boolean(description: str) -> Schema:
    return {"type": "boolean", "description": description}


def text(description: str, max_length: int | None = None, blank: bool = False) -> Schema:
    schema: Schema = {"type": "string", "description": description}
    if not blank:
        schema["pattern"] = NOT_BLANK
    if max_length is not None:
        schema["maxLength"] = max_length
    return schema


# --- requests -------------------------------------------------------------------------------------
def served_models(config: ServiceConfig) -> list[str]:
    """The model names a request may give (``ServiceConfig.allows_model``)."""
    spec = config.drafter_spec
    names = [config.model, *config.extra_models, *([spec.model] if spec.kind == "model" else [])]
    return list(dict.fromkeys(names))


def grammar_request(config: ServiceConfig) -> Schema:
    """``POST /v1/grammar/correct`` (a ``text`` longer than ``maxLength`` is a 413, not a 400)."""
    fields = {
        "text": text("the text to correct", config.max_grammar_chars),
        "model": {"enum": list(dict.fromkeys([*grammar_models(config), *served_models(config)])), "description": f"default {config.grammar_model!r}"},
        "speculate": boolean("default true; false decodes plainly (the same answer)"),
        "compare": boolean("default false; true also corrects plainly and reports the speedup"),
    }
    return obj(fields, ("text",), example={"text": "She go to school every days.", "compare": True})


INDEX = {
    "type": "string",
    "pattern": f"^{INDEX_NAME.pattern}$",
    "description": f"an index name: 1-64 letters, digits, '_', '-' or '.', not starting with '.' (default {DEFAULT_INDEX!r})",
}
DOCUMENT = obj(
    {
        "id": text("unique in the index"),
        "text": text("the document's text (chunked and embedded)"),
        "metadata": {"type": "object", "description": "any JSON object, kept with the document's chunks"},
    },
    ("id", "text"),
)


def documents_request(config: ServiceConfig) -> Schema:
    """``POST /v1/rag/documents`` (ids must also be unique in the request and new to the index)."""
    documents = {"type": "array", "items": DOCUMENT, "minItems": 1, "maxItems": config.max_rag_documents}
    example = {"index": DEFAULT_INDEX, "documents": [{"id": "eiffel", "text": "The Eiffel Tower is 330 metres tall.", "metadata": {"source": "notes"}}]}
    return obj({"index": INDEX, "documents": documents}, ("documents",), "document ids unique in the request and new to the index", example)


def rag_drafters(config: ServiceConfig) -> list[str]:
    return [name for name in DRAFTERS if "datastore" not in name or config.datastore is not None]


def query_request(config: ServiceConfig) -> Schema:
    """``POST /v1/rag/query``."""
    fields = {
        "index": INDEX,
        "question": text("the question", MAX_QUESTION_CHARS),
        "top_k": integer(1, config.max_rag_top_k, f"passages to retrieve (default {config.rag_top_k})"),
        "drafter": {"enum": rag_drafters(config), "description": f"default {config.rag_drafter!r}"},
        "max_tokens": integer(1, config.max_tokens_limit, f"default {config.default_max_tokens}"),
        "stream": boolean("answer with server-sent events"),
        "iterative": boolean("iterative RAG: retrieve again every few tokens (RaLMSpec); takes neither drafter nor top_k"),
        "retriever": {"enum": list(ITERATIVE_RETRIEVERS), "description": "with iterative: exact dense, HNSW or BM25 (default 'dense')"},
        "speculative_retrieval": boolean("with iterative: answer retrievals from a per-request cache, verified in batches (same answer)"),
    }
    return obj(fields, ("question",), example={"index": DEFAULT_INDEX, "question": "How tall is the Eiffel Tower?", "top_k": config.rag_top_k})



"""The JSON Schemas (2020-12, as OpenAPI 3.1 uses them) of the models, for one app's ``ServiceConfig``.

``json_schema(model, config)`` is pydantic's ``model_json_schema`` made ready for the document:

1. nested models inlined: every schema stands alone, with no ``$ref`` (each can be used by itself,
   and a schema embedded in the document could not resolve ``#/$defs/...``);
2. generated for ``config``: each ``ConfigRule`` gives its keywords for it (a server started with
   ``max_tokens_limit=64`` documents 64);
3. an optional field (``T | None``, where ``null`` reads as absent) written as ``T`` that also admits
   ``null``: ``{"type": ["integer", "null"], "minimum": 1}`` rather than an ``anyOf`` (so that its
   keywords stay where a reader looks for them).

Field titles are left out (the names say it).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema

from ..config import ServiceConfig
from .types import configured

Schema = dict[str, Any]
DATA = ("examples", "default", "enum", "const")  # keywords whose values are JSON data, not schemas
NULL = {"type": "null"}


class _NoFieldTitles(GenerateJsonSchema):
    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def json_schema(model: type[BaseModel], config: ServiceConfig) -> Schema:
    """``model``'s schema for a server running with ``config`` (module docstring)."""
    with configured(config):
        raw = model.model_json_schema(schema_generator=_NoFieldTitles)
    definitions = raw.pop("$defs", {})
    return optional_as_nullable(inline(raw, definitions))


def inline(schema: Any, definitions: dict[str, Schema]) -> Any:
    """``schema`` with each ``{"$ref": "#/$defs/Name", ...}`` replaced by the definition (and its siblings)."""
    if isinstance(schema, list):
        return [inline(item, definitions) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        siblings = {k: inline(v, definitions) for k, v in schema.items() if k != "$ref"}
        return {**inline(definitions[name], definitions), **siblings}
    return {k: v if k in DATA else inline(v, definitions) for k, v in schema.items()}


def optional_as_nullable(schema: Any) -> Any:
    """Every ``{"anyOf": [T, {"type": "null"}], ...}`` written as ``nullable(T)`` (module docstring)."""
    if isinstance(schema, list):
        return [optional_as_nullable(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    schema = {k: v if k in DATA else optional_as_nullable(v) for k, v in schema.items()}
    branches = schema.get("anyOf")
    if isinstance(branches, list) and len(branches) == 2 and branches[1] == NULL:
        return {**nullable(branches[0]), **{k: v for k, v in schema.items() if k != "anyOf"}}
    return schema


def nullable(schema: Schema) -> Schema:
    """``schema``, or ``null`` (which the service reads as "absent")."""
    if schema.get("type") == "null":
        return schema
    schema = dict(schema)
    if "const" in schema:
        schema["enum"] = [schema.pop("const")]
    if "enum" in schema:
        schema["enum"] = [*schema["enum"], None]
    if isinstance(schema.get("type"), str):
        schema["type"] = [schema["type"], "null"]
    if "enum" in schema or "type" in schema:
        return schema
    if "anyOf" in schema:
        return {**schema, "anyOf": [*schema["anyOf"], NULL]}
    return {"anyOf": [schema, NULL]}

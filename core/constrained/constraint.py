"""Constraint: what an answer must match (a JSON schema, any JSON object, a regex, a Lark grammar).

A ``Constraint`` is a value (hashable, comparable): the generator compiles it into a ``Grammar`` for
the model at hand (``specdraft.constrained.grammar``). ``check`` says, before anything runs, whether it
can be compiled, with a message that names the keyword and where it is in the schema (a JSON pointer),
or the limit it is over (``ConstraintLimits``).

JSON is generated in one fixed style: separators ``", "`` and ``": "`` and no newlines or other
whitespace between tokens (``JSON_STYLE``). A flexible style lets a model wander into runs of blank
lines, and a fixed one makes the keys, quotes, braces and separators *forced*: the grammar knows them
before the model runs, so they can be drafted (``specdraft.constrained.drafter``).

``from_response_format`` maps OpenAI's ``response_format`` (``text``, ``json_object``, ``json_schema``)
onto a constraint; the service and the Python API share it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Mapping

if TYPE_CHECKING:
    from llguidance._lib import JsonCompileOptions  # declared in llguidance's stubs only

Kind = Literal["json_schema", "json_object", "regex", "lark"]
KINDS: tuple[str, ...] = ("json_schema", "json_object", "regex", "lark")

# llguidance's JSON options: one compact style (module docstring)
JSON_STYLE: JsonCompileOptions = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}


class ConstraintError(ValueError):
    """A constraint that cannot be compiled (an invalid or unsupported schema or grammar), or one over
    ``ConstraintLimits``; the message says what and where."""


@dataclass(frozen=True)
class ConstraintLimits:
    """What a request may ask for: the source's size in bytes (UTF-8) and a schema's nesting depth
    (objects and arrays inside each other, the outermost counting 1)."""

    max_source_bytes: int = 32_768
    max_depth: int = 24

    def __post_init__(self) -> None:
        if self.max_source_bytes < 2 or self.max_depth < 1:
            raise ValueError("need max_source_bytes >= 2 and max_depth >= 1")


@dataclass(frozen=True)
class Constraint:
    """``kind`` and its ``source``: a JSON schema as JSON text, a regex, or a Lark grammar in
    llguidance's dialect (``%json {...}`` embeds a JSON schema, ``<tool_call>`` or ``<[151657]>`` names a
    special token). Build one with the class methods."""

    kind: Kind
    source: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {self.kind!r}")

    @classmethod
    def json_schema(cls, schema: Mapping[str, Any] | str | bool) -> "Constraint":
        """Any JSON value the schema accepts (``schema``: a dict, or its JSON text)."""
        if isinstance(schema, str):
            try:
                schema = json.loads(schema)
            except json.JSONDecodeError as error:
                raise ConstraintError(f"the schema is not valid JSON: {error}") from None
        return cls("json_schema", json.dumps(schema, ensure_ascii=False))  # key order kept: it is the answer's order

    @classmethod
    def json_object(cls) -> "Constraint":
        """Any JSON object (OpenAI's JSON mode)."""
        return cls("json_object", json.dumps({"type": "object"}))

    @classmethod
    def regex(cls, pattern: str) -> "Constraint":
        return cls("regex", pattern)

    @classmethod
    def lark(cls, grammar: str) -> "Constraint":
        return cls("lark", grammar)

    @property
    def schema(self) -> Any:
        """The JSON schema of a ``json_schema`` or ``json_object`` constraint (None otherwise)."""
        return json.loads(self.source) if self.kind in ("json_schema", "json_object") else None

    def grammar(self) -> str:
        """The constraint as an llguidance grammar (what ``LLMatcher`` takes)."""
        from llguidance import LLMatcher

        if self.kind in ("json_schema", "json_object"):
            return LLMatcher.grammar_from_json_schema(self.source, overrides=JSON_STYLE)
        if self.kind == "regex":
            return LLMatcher.grammar_from_regex(self.source)
        return LLMatcher.grammar_from_lark(self.source)

    def check(self, limits: ConstraintLimits = ConstraintLimits()) -> None:
        """Raise ``ConstraintError`` unless the constraint is within ``limits`` and compiles."""
        size = len(self.source.encode("utf-8"))
        if size > limits.max_source_bytes:
            raise ConstraintError(
                f"the {_NOUNS[self.kind]} is {size} bytes; at most {limits.max_source_bytes} are allowed"
            )
        schema = self.schema
        if self.kind == "json_schema":
            depth = _depth(schema)
            if depth > limits.max_depth:
                raise ConstraintError(f"the schema nests {depth} levels deep; at most {limits.max_depth} are allowed")
            _check_against_metaschema(schema)
        from llguidance import LLMatcher

        failed, messages = LLMatcher.validate_grammar_with_warnings(self.grammar())
        if failed:
            raise ConstraintError(_located(messages[0] if messages else "it does not compile", schema, self.kind))


_NOUNS = {"json_schema": "schema", "json_object": "schema", "regex": "regex", "lark": "grammar"}


def from_response_format(response_format: Mapping[str, Any] | None) -> Constraint | None:
    """OpenAI's ``response_format`` as a constraint: ``{"type": "text"}`` or None -> None,
    ``{"type": "json_object"}`` -> any object, ``{"type": "json_schema", "json_schema": {"name",
    "schema", "strict"}}`` -> the schema (constrained whatever ``strict`` says; a missing schema
    allows any JSON value). Raises ``ConstraintError`` for another type."""
    if response_format is None:
        return None
    kind = response_format.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        return Constraint.json_object()
    if kind == "json_schema":
        spec = response_format.get("json_schema") or {}
        return Constraint.json_schema(spec.get("schema", {}))
    raise ConstraintError(f"response_format type must be text, json_object or json_schema, got {kind!r}")


def _depth(value: Any) -> int:
    """Nesting depth of dicts and lists (a scalar is 0)."""
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


def _pointer(path: Any) -> str:
    return "/" + "/".join(str(part).replace("~", "~0").replace("/", "~1") for part in path) if path else "/"


def _check_against_metaschema(schema: Any) -> None:
    """A schema that is not a JSON schema at all (``{"type": "strin"}``): say where."""
    import jsonschema_rs

    try:
        jsonschema_rs.meta.validate(schema)
    except jsonschema_rs.ValidationError as error:
        raise ConstraintError(f"invalid schema at {_pointer(list(error.instance_path))}: {error.message}") from None
    except jsonschema_rs.ReferencingError as error:
        raise ConstraintError(f"invalid schema: {error}") from None


def _located(message: str, schema: Any, kind: str) -> str:
    """llguidance's message, with the JSON pointer of the first place a word it names appears in the
    schema: as a key (``Unimplemented keys: ["if"]``) or as a string value (``Unknown format: hostnamex``,
    ``Pointer '/nope' does not exist``)."""
    if kind != "json_schema":
        return f"invalid {_NOUNS[kind]}: {message}"
    for word in _named_words(message):
        where = _find(schema, word, [])
        if where is not None:
            return f"unsupported schema at {_pointer(where)}: {message}"
    return f"unsupported schema: {message}"


def _named_words(message: str) -> list[str]:
    import re

    return (
        re.findall(r'"([^"]+)"', message)
        + re.findall(r"'([^']+)'", message)
        + re.findall(r":\s*([^\s\"']+)\s*$", message)
    )


def _find(value: Any, word: str, path: list) -> list | None:
    """The path of the first key equal to ``word``, or of the first string value that is or ends in it."""
    if isinstance(value, dict):
        if word in value:
            return [*path, word]
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return path if isinstance(value, str) and (value == word or value.endswith(word)) else None
    for name, child in items:
        found = _find(child, word, [*path, name])
        if found is not None:
            return found
    return None

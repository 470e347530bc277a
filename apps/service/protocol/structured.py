"""Structured output and tools in a chat request: ``response_format``, ``tools``, ``tool_choice``,
``parallel_tool_calls`` as OpenAI's clients send them (docs/service.md, "Structured outputs and tool
calls"). The shapes and the rules across fields (a named function is one of ``tools``; ``required``
or a named function needs tools; tool names are unique: ``check_tools``) are checked here; whether a
schema can be compiled is checked when the request runs (``..structured_output``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Mapping, Union

from annotated_types import MaxLen
from pydantic import BeforeValidator, ConfigDict, Field, StrictBool, StrictStr, model_validator

from specdraft.tool_calls import ToolChoice as Choice
from specdraft.tool_calls import ToolSpec

from .errors import describe, refuse
from .types import Keywords, RequestBody, absent_as_null

MAX_TOOLS = 128  # OpenAI's own limit
NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
NAME_WORDS = "a name of 1-64 letters, digits, '_' or '-'"
TOOL_CHOICES = ("none", "auto", "required")
FORMATS = ("text", "json_object", "json_schema")


def _name(name: Any) -> Any:
    if not isinstance(name, str) or NAME.fullmatch(name) is None:
        raise refuse(f"{{path}} must be {NAME_WORDS}, got {describe(name)}")
    return name


Name = Annotated[
    StrictStr, BeforeValidator(_name), Keywords({"pattern": f"^{NAME.pattern}$", "description": NAME_WORDS})
]
JsonSchemaObject = Annotated[
    dict[str, Any],
    Keywords(
        {
            "description": "a JSON schema (checked when the request runs: "
            "a keyword the grammar cannot follow is a 400 naming it)"
        }
    ),
]


def _an_object(value: Any, what: str) -> Any:
    if not isinstance(value, dict):
        raise refuse(f"{{path}} must be {what}, got {describe(value)}")
    return value


# --- response_format ------------------------------------------------------------------------------
class JsonSchemaSpec(RequestBody):
    """``response_format.json_schema``: the answer follows ``schema`` (constrained whatever ``strict`` says)."""

    name: Name = Field(description="the schema's name")
    description: StrictStr | None = None
    schema_: JsonSchemaObject | None = Field(
        None, alias="schema", description="the JSON schema of the answer (absent: any JSON value)"
    )
    strict: StrictBool | None = Field(None, description="accepted; the answer is constrained either way")

    @property
    def json_schema(self) -> dict[str, Any] | None:
        return self.schema_


def _format_type(kind: Any) -> Any:
    if kind not in FORMATS:
        raise refuse(f"{{path}} must be one of {', '.join(FORMATS)}, got {describe(kind)}")
    return kind


class ResponseFormatBody(RequestBody):
    """``{"type": "text" | "json_object" | "json_schema", "json_schema"?}``; ``json_schema`` is
    required with type json_schema (and read only then)."""

    model_config = ConfigDict(
        json_schema_extra={
            "if": {"properties": {"type": {"const": "json_schema"}}},
            "then": {"required": ["json_schema"], "properties": {"json_schema": {"not": {"type": "null"}}}},
        }
    )

    type: Annotated[Literal["text", "json_object", "json_schema"], BeforeValidator(_format_type)]
    json_schema: JsonSchemaSpec | None = Field(None, description="with type json_schema: the schema the answer follows")

    @model_validator(mode="before")
    @classmethod
    def _an_object(cls, value: Any) -> Any:
        _an_object(value, 'an object such as {"type": "json_object"}')
        return absent_as_null(value, ("type",))

    @model_validator(mode="after")
    def _schema_with_json_schema(self) -> ResponseFormatBody:
        if self.type == "json_schema" and self.json_schema is None:
            raise refuse('{path}.json_schema is required with type "json_schema"', "{path}.json_schema")
        return self

    def to_dict(self) -> dict[str, Any]:
        """In OpenAI's shape (what ``specdraft.constrained.from_response_format`` reads)."""
        if self.type != "json_schema" or self.json_schema is None:
            return {"type": self.type}
        return {"type": self.type, "json_schema": self.json_schema.model_dump(by_alias=True, exclude_none=True)}


# --- tools ----------------------------------------------------------------------------------------
class FunctionDefinition(RequestBody):
    name: Name = Field(description=f"{NAME_WORDS}, unique among the tools")
    description: StrictStr | None = None
    parameters: JsonSchemaObject | None = Field(
        None, description="a JSON schema of the arguments object (absent: none)"
    )
    strict: StrictBool | None = Field(None, description="accepted; required and named calls are constrained either way")


class FunctionTool(RequestBody):
    type: Literal["function"]
    function: FunctionDefinition

    def to_dict(self) -> dict[str, Any]:
        """The tool as chat templates take it (``{"type": "function", "function": {...}}``)."""
        return self.model_dump(exclude_none=True)


def function_tool(value: Any) -> Any:
    """``value``, refused when it is an object whose ``type`` is not "function" (the only tools served)."""
    if isinstance(value, dict) and value.get("type") != "function":
        raise refuse(
            f'{{path}}.type must be "function" (the only tools served), got {describe(value.get("type"))}',
            "{path}.type",
        )
    return value


def _tool(value: Any) -> Any:
    return function_tool(_an_object(value, 'a function tool {"type": "function", "function": {"name": ...}}'))


Tool = Annotated[FunctionTool, BeforeValidator(_tool)]
Tools = Annotated[list[Tool], MaxLen(MAX_TOOLS)]


class FunctionName(RequestBody):
    name: StrictStr


class NamedToolChoice(RequestBody):
    type: Literal["function"]
    function: FunctionName


def _tool_choice(value: Any) -> Any:
    if isinstance(value, str):
        if value not in TOOL_CHOICES:
            raise refuse(
                f"{{path}} must be one of {', '.join(TOOL_CHOICES)} or a named function, got {describe(value)}"
            )
        return value
    _an_object(value, f'one of {", ".join(TOOL_CHOICES)} or {{"type": "function", "function": {{"name": ...}}}}')
    if value.get("type") != "function":
        raise refuse(f'{{path}}.type must be "function", got {describe(value.get("type"))}', "{path}.type")
    function = value.get("function")
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise refuse(f'{{path}}.function must be {{"name": "..."}}, got {describe(function)}', "{path}.function")
    return value


ToolChoice = Annotated[Union[Literal["none", "auto", "required"], NamedToolChoice], BeforeValidator(_tool_choice)]


def check_tools(tools: list[FunctionTool] | None, choice: str | NamedToolChoice | None) -> None:
    """The rules across ``tools`` and ``tool_choice`` (module docstring); raises ``refuse`` errors
    naming the field at fault (for a model validator)."""
    names: dict[str, int] = {}
    for i, tool in enumerate(tools or ()):
        if tool.function.name in names:
            raise refuse(
                f"tools[{i}].function.name {tool.function.name!r} is also tools[{names[tool.function.name]}]'s; "
                "tool names must be unique",
                f"tools[{i}].function.name",
            )
        names[tool.function.name] = i
    if isinstance(choice, NamedToolChoice):
        if not names:
            raise refuse(
                f"tool_choice names the function {choice.function.name!r} but the request has no tools", "tool_choice"
            )
        if choice.function.name not in names:
            raise refuse(
                f"tool_choice names the function {choice.function.name!r}, which is not in tools "
                f"({', '.join(map(repr, names))})",
                "tool_choice.function.name",
            )
    elif choice == "required" and not names:
        raise refuse('tool_choice "required" needs tools', "tool_choice")


@dataclass(frozen=True)
class ToolRequest:
    """A chat request's ``tools`` (OpenAI's shape), ``tool_choice`` as sent (None: absent) and
    ``parallel_tool_calls``, as validated above (a chat body's ``tools``); ``specs`` and ``tool_choice``
    read them as ``specdraft.tool_calls`` takes them, without checking them again."""

    tools: tuple[Mapping[str, Any], ...] = ()
    choice: Any = None
    parallel: bool = True

    def specs(self) -> tuple[ToolSpec, ...]:
        functions = [tool["function"] for tool in self.tools]
        return tuple(ToolSpec(f["name"], f.get("description"), f.get("parameters"), f.get("strict")) for f in functions)

    def tool_choice(self) -> Choice:
        """``tool_choice`` with OpenAI's default (absent: "auto" with tools, "none" without)."""
        if self.choice is None:
            return Choice("auto" if self.tools else "none")
        return (
            Choice(self.choice) if isinstance(self.choice, str) else Choice("function", self.choice["function"]["name"])
        )

"""ToolSpec and ToolChoice: OpenAI's ``tools`` and ``tool_choice``, validated.

Every error is a ``ToolError`` (a ValueError) whose message starts with where the fault is, in the
request's own terms (``tools[1].function.name``, ``tool_choice.function.name``), and says what is
wrong, so the service can answer 400 with it as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Sequence

from ..constrained import Constraint, ConstraintError

# OpenAI's rule for function names
NAME_PATTERN = re.compile(r"[a-zA-Z0-9_-]{1,64}")
NAME_RULE = "letters, digits, underscores and dashes, 1 to 64 of them"


class ToolError(ValueError):
    """An invalid tool, ``tool_choice`` or tool-call history; the message says what and where, and
    ``param`` names the field at fault where the raiser knows it (``tools[0].function.parameters.type``)."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


@dataclass(frozen=True)
class ToolSpec:
    """One function tool. ``parameters``: the arguments' JSON schema (an object schema), None when the
    tool gave none (the function takes no arguments); ``description`` and ``strict`` None when absent.
    Build one from a request with ``from_openai``, which validates it."""

    name: str
    description: str | None = None
    parameters: Mapping[str, Any] | None = field(default=None, hash=False)
    strict: bool | None = None

    @classmethod
    def from_openai(cls, tool: Any, where: str = "tools[0]") -> "ToolSpec":
        """The tool ``{"type": "function", "function": {"name", "description"?, "parameters"?,
        "strict"?}}``; ``where`` names it in error messages. Raises ``ToolError``."""
        if not isinstance(tool, Mapping):
            raise ToolError(f"{where} must be an object, got {_kind(tool)}")
        if tool.get("type") != "function":
            raise ToolError(f'{where}.type must be "function", got {tool.get("type")!r}')
        function = tool.get("function")
        if not isinstance(function, Mapping):
            raise ToolError(f"{where}.function must be an object, got {_kind(function)}")
        name = function.get("name")
        if not isinstance(name, str) or NAME_PATTERN.fullmatch(name) is None:
            raise ToolError(f"{where}.function.name must be {NAME_RULE}, got {name!r}")
        description = function.get("description")
        if description is not None and not isinstance(description, str):
            raise ToolError(f"{where}.function.description must be a string, got {_kind(description)}")
        strict = function.get("strict")
        if strict is not None and not isinstance(strict, bool):
            raise ToolError(f"{where}.function.strict must be true or false, got {strict!r}")
        parameters = function.get("parameters")
        if parameters is not None:
            check_parameters(parameters, f"{where}.function.parameters")
        return cls(name, description, parameters, strict)

    def to_openai(self) -> dict[str, Any]:
        """The tool as OpenAI writes it (absent fields left out): what the chat template lists."""
        function: dict[str, Any] = {"name": self.name}
        if self.description is not None:
            function["description"] = self.description
        if self.parameters is not None:
            function["parameters"] = dict(self.parameters)
        if self.strict is not None:
            function["strict"] = self.strict
        return {"type": "function", "function": function}

    def arguments_schema(self) -> dict[str, Any]:
        """The schema a constrained call's arguments follow: ``parameters``, no other arguments than
        those it declares (``additionalProperties`` false at the top unless the schema says otherwise:
        a function takes the parameters it names, and a small model otherwise invents more), or no
        arguments at all (``{}``) when the tool gave no ``parameters`` (OpenAI: an empty parameter list)."""
        if self.parameters is None:
            return {"type": "object", "properties": {}, "additionalProperties": False}
        return {"additionalProperties": False, **self.parameters}


def tools_from_openai(tools: Any) -> tuple[ToolSpec, ...]:
    """A request's ``tools`` list, each validated (``ToolSpec.from_openai``), names distinct."""
    if not isinstance(tools, Sequence) or isinstance(tools, (str, bytes)):
        raise ToolError(f"tools must be a list, got {_kind(tools)}")
    specs: list[ToolSpec] = []
    for index, tool in enumerate(tools):
        spec = ToolSpec.from_openai(tool, f"tools[{index}]")
        for earlier, other in enumerate(specs):
            if other.name == spec.name:
                raise ToolError(f"tools[{index}].function.name {spec.name!r} repeats tools[{earlier}]'s")
        specs.append(spec)
    return tuple(specs)


Mode = Literal["none", "auto", "required", "function"]


@dataclass(frozen=True)
class ToolChoice:
    """OpenAI's ``tool_choice``: ``mode`` "none" (no calls), "auto" (the model decides; its calls are
    parsed from its text), "required" (one call or more, constrained) or "function" (exactly one call
    of the function ``name``, constrained)."""

    mode: Mode
    name: str | None = None

    def __post_init__(self) -> None:
        if (self.mode == "function") != (self.name is not None):
            raise ValueError('a ToolChoice names a function exactly when its mode is "function"')

    @property
    def constrained(self) -> bool:
        """Whether the reply is constrained to tool calls (``ToolCallFormat.constraint``)."""
        return self.mode in ("required", "function")

    @classmethod
    def from_openai(cls, choice: Any, tools: Sequence[ToolSpec]) -> "ToolChoice":
        """``tool_choice`` as a request gives it (None: "auto" with tools, "none" without, as OpenAI
        does), checked against the request's ``tools``. Raises ``ToolError``."""
        if choice is None:
            return cls("auto" if tools else "none")
        if choice in ("none", "auto", "required"):
            if choice == "required" and not tools:
                raise ToolError('tool_choice is "required" but the request gives no tools')
            return cls(choice)
        if (
            not isinstance(choice, Mapping)
            or choice.get("type") != "function"
            or not isinstance(choice.get("function"), Mapping)
        ):
            raise ToolError(
                'tool_choice must be "none", "auto", "required" or {"type": "function", "function": {"name": ...}}, '
                f"got {choice!r}"
            )
        name = choice["function"].get("name")
        names = [tool.name for tool in tools]
        if name not in names:
            listed = ", ".join(names) if names else "none given"
            raise ToolError(f"tool_choice.function.name {name!r} is not one of the request's tools ({listed})")
        return cls("function", name)


def check_parameters(parameters: Any, where: str) -> None:
    """Raise ``ToolError`` (its ``param`` set) unless ``parameters``, the tool's field at ``where``, is an
    object schema the grammar can follow."""
    if not isinstance(parameters, Mapping):
        raise ToolError(f"{where} must be a JSON schema object, got {_kind(parameters)}", where)
    if parameters.get("type", "object") != "object":
        raise ToolError(
            f'{where}.type must be "object" (arguments are a JSON object), got {parameters.get("type")!r}',
            f"{where}.type",
        )
    try:
        Constraint.json_schema(dict(parameters)).check()
    except ConstraintError as error:
        raise ToolError(f"{where}: {error}", where) from None


def _kind(value: Any) -> str:
    names = {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        type(None): "null",
    }
    for kind, noun in names.items():
        if isinstance(value, kind):  # bool before int: True is an int too
            return noun
    return type(value).__name__

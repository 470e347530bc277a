"""The body of ``POST /v1/responses`` (``ResponsesBody``, docs/responses-api.md) and its translation into
the chat completion body that is then validated and run as every chat request (``to_chat``).

This model checks only the shapes the Responses API alone has (``input`` items, flat function tools,
``text.format``); the chat body's checks do the rest, and their 400s are reworded in the Responses API's
names (``ChatTranslation.rename``: ``messages[2].tool_call_id`` -> ``input[1].call_id``, ...).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union

from annotated_types import MaxLen, MinLen
from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    StrictBool,
    StrictInt,
    StrictStr,
    model_validator,
)

from .chat import joined, text_content
from .errors import RequestError, describe, refuse
from .openai_fields import COMPLETION_DRAFTER, SERVED_MODEL, TOKEN_LIMIT, Sampling
from .structured import MAX_TOOLS, FunctionDefinition, FunctionName, JsonSchemaSpec, Name, function_tool
from .types import Neutral, RequestBody

ITEM_TYPES = ("message", "function_call", "function_call_output")
TEXT_PARTS = ("input_text", "output_text", "text")


def _content(content: Any) -> Any:
    return text_content(content, TEXT_PARTS, "{path} must be a string or a list of text parts, got {value}")


class TextPart(RequestBody):
    type: Literal["input_text", "output_text", "text"]
    text: StrictStr


Content = Annotated[Union[StrictStr, list[TextPart]], BeforeValidator(_content)]


def _item(value: Any) -> Any:
    if not isinstance(value, dict):
        raise refuse(f"{{path}} must be an input item (a message or a function call's output), got {describe(value)}")
    kind = value.get("type", "message" if "role" in value else None)
    if kind not in ITEM_TYPES:
        raise refuse(f"{{path}}.type must be one of {', '.join(ITEM_TYPES)}, got {describe(kind)}", "{path}.type")
    return {**value, "type": kind}


_REQUIRED = {"message": ("role", "content"), "function_call": ("call_id", "name", "arguments")}
_REQUIRED["function_call_output"] = ("call_id", "output")


def _required_by_type() -> dict[str, Any]:
    """What JSON Schema can say of ``InputItem._fields_of_its_type``."""
    rules = []
    for kind, names in _REQUIRED.items():
        given = {"required": list(names), "properties": {name: {"not": {"type": "null"}} for name in names}}
        test = {"properties": {"type": {"const": kind}}, **({} if kind == "message" else {"required": ["type"]})}
        rules.append({"if": test, "then": given})
    return {"allOf": rules}


class InputItem(RequestBody):
    """A message, a ``function_call`` an earlier answer made, or a ``function_call_output`` (module
    docstring); each type's fields are required for it."""

    model_config = ConfigDict(json_schema_extra=_required_by_type())

    type: Literal["message", "function_call", "function_call_output"] = Field("message", description="absent: message")
    role: Literal["user", "assistant", "system", "developer"] | None = None
    content: Content | None = None
    call_id: StrictStr | None = None
    name: StrictStr | None = None
    arguments: StrictStr | None = Field(None, description="the call's arguments: a JSON object, as text")
    output: Content | None = Field(None, description="the tool's answer to the call call_id")

    @model_validator(mode="after")
    def _fields_of_its_type(self) -> InputItem:
        for name in _REQUIRED[self.type]:
            if getattr(self, name) is None:
                raise refuse(f"{{path}}.{name} is required in a {self.type} item", f"{{path}}.{name}")
        return self


def _input(value: Any) -> Any:
    """A string as the one user message it stands for; a list as it is."""
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": value}]
    if isinstance(value, list) and not value:
        raise refuse("{path} must hold at least one item")
    if not isinstance(value, list):
        raise refuse(f"{{path}} must be a string or a list of input items, got {describe(value)}")
    return value


@dataclass(frozen=True)
class _OrAString:
    """Documents a list field that also takes a string (which its ``BeforeValidator`` turns into a list)."""

    def __get_pydantic_json_schema__(self, schema: Any, handler: GetJsonSchemaHandler) -> dict[str, Any]:
        return {"anyOf": [{"type": "string"}, handler(schema)]}


class FunctionTool(FunctionDefinition):
    """A function tool, flat: the chat tool's ``function`` with ``type`` beside its fields."""

    type: Literal["function"]


class NamedFunction(FunctionName):
    type: Literal["function"]


ToolChoice = Union[Literal["none", "auto", "required"], NamedFunction]


class Format(JsonSchemaSpec):
    """``text.format``: the chat request's ``json_schema`` flat, with ``type`` beside its fields
    (``name`` needed with type json_schema)."""

    model_config = ConfigDict(
        json_schema_extra={
            "if": {"properties": {"type": {"const": "json_schema"}}},
            "then": {"required": ["name"], "properties": {"name": {"not": {"type": "null"}}}},
        }
    )

    type: Literal["text", "json_object", "json_schema"]
    name: Name | None = None  # type: ignore[assignment]

    def response_format(self) -> dict[str, Any]:
        """The chat request's ``response_format``."""
        if self.type != "json_schema":
            return {"type": self.type}
        return {"type": self.type, "json_schema": self.model_dump(by_alias=True, exclude_none=True, exclude={"type"})}


class TextParam(RequestBody):
    format: Format | None = None


class ResponsesBody(Sampling):
    """OpenAI's Responses API request (module docstring)."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"input": "Name three primary colours."}]})

    model: Annotated[StrictStr, SERVED_MODEL] | None = None
    input: Annotated[
        list[Annotated[InputItem, BeforeValidator(_item)]], MinLen(1), BeforeValidator(_input), _OrAString()
    ] = Field(description="a user message, or a list of messages, function calls and their outputs")
    instructions: StrictStr | None = Field(None, description="a system message first (not carried over)")
    previous_response_id: StrictStr | None = Field(None, description="continue a stored response's conversation")
    store: StrictBool | None = Field(None, description="false: not kept for a later previous_response_id")
    tools: Annotated[list[Annotated[FunctionTool, BeforeValidator(function_tool)]], MaxLen(MAX_TOOLS)] | None = None
    tool_choice: ToolChoice | None = Field(None, description="none, auto (default with tools), required or a function")
    parallel_tool_calls: StrictBool | None = None
    text: TextParam | None = Field(None, description="format: text, json_object or json_schema")
    max_output_tokens: Annotated[StrictInt, TOKEN_LIMIT] | None = None
    stream: StrictBool | None = Field(None, description="answer with server-sent events")
    drafter: Annotated[StrictStr, COMPLETION_DRAFTER] | None = None
    background: Annotated[
        Any, Neutral.falsy("{path} is not supported; the answer comes while you wait", "no background")
    ] = None
    conversation: Annotated[Any, Neutral.null("{path} is not supported; send previous_response_id", "none")] = None

    @property
    def stored(self) -> bool:
        return self.store is not False


@dataclass(frozen=True)
class ChatTranslation:
    """A Responses request as a chat completion ``body``; ``conversation``: its messages without the
    instructions (what a stored response keeps, before its answer); ``sources``: for each chat
    message, the Responses field it came from, and for each of its tool calls, theirs."""

    body: dict[str, Any]
    conversation: tuple[dict[str, Any], ...]
    sources: tuple[tuple[str, tuple[str, ...]], ...]

    def rename(self, error: RequestError) -> RequestError:
        """``error`` (a chat body's) in the Responses API's names (module docstring)."""
        if error.param is None:
            return error
        param = self._param(error.param)
        message = error.message.replace(error.param, param)
        for chat, responses in _WORDS:
            message = re.sub(rf"\b{re.escape(chat)}\b", responses, message)
        return RequestError(message, param, error.status, error.code, error.type, error.headers)

    def _param(self, param: str) -> str:
        found = re.match(r"messages\[(\d+)\](?:\.tool_calls\[(\d+)\](?:\.function)?)?(.*)", param)
        if found is None:
            if re.match(r"tools\[\d+\]\.function", param):
                return re.sub(r"^(tools\[\d+\])\.function", r"\1", param)
            for chat, responses in _PARAMS:
                if param == chat or param.startswith((chat + ".", chat + "[")):
                    return responses + param[len(chat) :]
            return param
        index, call, rest = int(found.group(1)), found.group(2), found.group(3)
        source, calls = self.sources[index] if index < len(self.sources) else ("input", ())
        if call is not None and int(call) < len(calls):
            return calls[int(call)] + rest
        if not source.startswith("input["):
            return source  # the instructions, or a stored response's conversation
        if self.body["messages"][index]["role"] == "tool":
            rest = rest.replace(".tool_call_id", ".call_id").replace(".content", ".output")
        return source + rest


_PARAMS = (
    ("messages", "input"),
    ("max_completion_tokens", "max_output_tokens"),
    ("max_tokens", "max_output_tokens"),
    ("response_format.json_schema", "text.format"),
    ("response_format", "text.format"),
    ("tool_choice.function", "tool_choice"),
)
_WORDS = (("max_tokens", "max_output_tokens"), ("response_format", "text.format"))


def to_chat(body: ResponsesBody, history: tuple[dict[str, Any], ...] = ()) -> ChatTranslation:
    """``body`` (after ``history``, a stored response's conversation) as a chat completion body."""
    messages: list[dict[str, Any]] = []
    sources: list[tuple[str, tuple[str, ...]]] = []
    if body.instructions is not None:
        messages.append({"role": "system", "content": body.instructions})
        sources.append(("instructions", ()))
    for message in history:
        messages.append(message)
        sources.append(("previous_response_id", ("previous_response_id",) * len(message.get("tool_calls", ()))))
    for i, item in enumerate(body.input):
        where = f"input[{i}]"
        if item.type == "function_call":
            call = {
                "id": item.call_id,
                "type": "function",
                "function": {"name": item.name, "arguments": item.arguments},
            }
            last = messages[-1] if messages else None
            if last is None or last["role"] != "assistant" or sources[-1][0] == "previous_response_id":
                last = {"role": "assistant", "content": None, "tool_calls": []}
                messages.append(last)
                sources.append((where, ()))
            last.setdefault("tool_calls", []).append(call)
            sources[-1] = (sources[-1][0], (*sources[-1][1], where))
        elif item.type == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": item.call_id, "content": joined(item.output)})
            sources.append((where, ()))
        else:
            messages.append({"role": item.role, "content": joined(item.content)})
            sources.append((where, ()))
    chat: dict[str, Any] = {"model": body.model, "messages": messages}
    if body.tools is not None:
        chat["tools"] = [
            {"type": "function", "function": tool.model_dump(exclude={"type"}, exclude_none=True)}
            for tool in body.tools
        ]
    if body.tool_choice is not None:
        choice = body.tool_choice
        chat["tool_choice"] = (
            choice if isinstance(choice, str) else {"type": "function", "function": {"name": choice.name}}
        )
    if body.text is not None and body.text.format is not None:
        chat["response_format"] = body.text.format.response_format()
    for name in ("parallel_tool_calls", "temperature", "top_p", "top_k", "seed", "drafter"):
        chat[name] = getattr(body, name)
    chat["max_completion_tokens"] = body.max_output_tokens
    chat["stream"] = body.stream
    conversation = tuple(messages[1:] if body.instructions is not None else messages)
    return ChatTranslation({k: v for k, v in chat.items() if v is not None}, conversation, tuple(sources))

"""The prompt of a completion request: the chat endpoint's ``messages`` or the text endpoint's ``prompt``
(docs/service.md).

Messages: roles ``system``, ``user``, ``assistant``, ``developer`` (the template gets ``system``) and
``tool``; ``content`` a string or text parts joined with ``"\\n"`` (any other part is a 400: the
models read text only), required except an assistant's; an assistant's ``tool_calls`` (``arguments``
a JSON object's text, given to the template as an object); a tool message's ``tool_call_id`` must
answer an earlier call. Prompts: a string, token ids, or up to ``MAX_PROMPTS`` of them (one choice
each), none empty; token ids are checked against the vocabulary where they are encoded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union

from annotated_types import Ge, MaxLen, MinLen
from pydantic import AfterValidator, BeforeValidator, ConfigDict, StrictInt, StrictStr, model_validator

from .errors import describe, refuse
from .types import Neutral, RequestBody, absent_as_null

ROLES = ("system", "user", "assistant", "developer", "tool")
TEMPLATE_ROLES = {"developer": "system"}  # request role -> the role the chat template gets
MAX_PROMPTS = 20

Prompt = Union[str, tuple[int, ...]]  # text, or token ids sent as they are


@dataclass(frozen=True)
class HistoryCall:
    """A tool call an assistant message of the history made: ``arguments`` is a JSON object's text."""

    id: str
    name: str
    arguments: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": json.loads(self.arguments)},
        }


@dataclass(frozen=True)
class ChatMessage:
    """A message as the chat template gets it: ``role`` system, user, assistant or tool; text
    ``content``; an assistant's ``tool_calls`` (arguments as objects, as templates take them) and a
    tool message's ``tool_call_id``."""

    role: str
    content: str
    tool_calls: tuple[HistoryCall, ...] = ()
    tool_call_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [call.to_dict() for call in self.tool_calls]
        if self.tool_call_id is not None:
            message["tool_call_id"] = self.tool_call_id
        return message


class TextPart(RequestBody):
    """A text part of a message's content."""

    type: Literal["text"]
    text: StrictStr


def _role(role: Any) -> Any:
    if role not in ROLES:
        why = (
            " (the legacy function role: send a tool message with the call's tool_call_id)"
            if role == "function"
            else ""
        )
        raise refuse(f"{{path}} must be one of {', '.join(ROLES)}, got {describe(role)}{why}")
    return role


def text_content(content: Any, types: tuple[str, ...], neither: str, not_an_object: str | None = None) -> Any:
    """``content``, a string or a list of text parts (``type`` one of ``types``), checked whole so that
    an error names the part, not a union's branch. ``neither``: the message for a value of neither
    shape (``{value}``: the value); ``not_an_object``: what a part that is not an object must be (None:
    it is worded as a part of another type)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise refuse(neither.replace("{value}", describe(content)))
    for i, part in enumerate(content):
        where = f"{{path}}[{i}]"
        is_object = isinstance(part, dict)
        if not is_object and not_an_object is not None:
            raise refuse(f"{where} must be {not_an_object}, got {describe(part)}", where)
        if not is_object or part.get("type") not in types:
            raise refuse(
                f"{where} is a {describe(part.get('type') if is_object else part)} part; the served model reads "
                f'text only: send {{"type": "{types[0]}", "text": "..."}} parts',
                where,
            )
        if not isinstance(part.get("text"), str):
            raise refuse(f"{where}.text must be a string, got {describe(part.get('text'))}", f"{where}.text")
    return content


def joined(content: str | list[Any], separator: str = "\n") -> str:
    """A validated content's text: a string as it is, text parts' texts joined with ``separator``."""
    return content if isinstance(content, str) else separator.join(part.text for part in content)


def _content(content: Any) -> Any:
    neither = "{path} must be a string, got {value} (or a list of text parts)"
    return text_content(content, ("text",), neither, 'a part {"type": "text", "text": "..."}')


Content = Annotated[Union[StrictStr, list[TextPart]], BeforeValidator(_content)]
NO_FUNCTION_CALL = Neutral.null(
    "{path} (legacy function calling) is not supported; send tool_calls", "legacy function calling: send tool_calls"
)


def _arguments(arguments: str) -> str:
    try:
        value = json.loads(arguments)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise refuse(f"{{path}} must be the text of a JSON object (the arguments by name), got {describe(arguments)}")
    return arguments


class CalledFunction(RequestBody):
    name: StrictStr
    arguments: Annotated[StrictStr, AfterValidator(_arguments)]


class ToolCall(RequestBody):
    """A call in an assistant message of the history (``arguments``: a JSON object as text)."""

    id: StrictStr
    type: Literal["function"]
    function: CalledFunction


# per role, what JSON Schema can say of the rules ``Message._by_role`` checks
_ROLE_RULES = {
    "allOf": [
        {
            "if": {"properties": {"role": {"const": "assistant"}}},
            "else": {
                "required": ["content"],
                "properties": {"content": {"not": {"type": "null"}}, "tool_calls": {"type": "null"}},
            },
        },
        {
            "if": {"properties": {"role": {"const": "tool"}}},
            "then": {"required": ["tool_call_id"], "properties": {"tool_call_id": {"type": "string"}}},
        },
    ]
}


class Message(RequestBody):
    """A chat message: ``developer`` reaches the chat template as ``system``; text parts are joined
    (module docstring for the rules by role)."""

    model_config = ConfigDict(json_schema_extra=_ROLE_RULES)

    role: Annotated[Literal["system", "user", "assistant", "developer", "tool"], BeforeValidator(_role)]
    content: Content | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: StrictStr | None = None
    function_call: Annotated[Any, NO_FUNCTION_CALL] = None

    @model_validator(mode="before")
    @classmethod
    def _an_object(cls, message: Any) -> Any:
        if not isinstance(message, dict):
            raise refuse(f"{{path}} must be an object with role and content, got {describe(message)}")
        return absent_as_null(message, ("role",))  # the role's check words a missing role as it words null

    @model_validator(mode="after")
    def _by_role(self) -> Message:
        if self.role != "assistant":
            if self.content is None:
                raise refuse(
                    "{path}.content must be a string, got null (or a list of text parts; only an assistant's content "
                    "may be null)",
                    "{path}.content",
                )
            if self.tool_calls is not None:
                raise refuse(
                    f"{{path}}.tool_calls: only assistant messages make tool calls, not {self.role!r} ones",
                    "{path}.tool_calls",
                )
        if self.role == "tool" and self.tool_call_id is None:
            raise refuse(
                "{path}.tool_call_id is required in a tool message (the id of the call it answers)",
                "{path}.tool_call_id",
            )
        return self

    def chat_message(self) -> ChatMessage:
        content = "" if self.content is None else joined(self.content)
        calls = tuple(HistoryCall(c.id, c.function.name, c.function.arguments) for c in self.tool_calls or ())
        return ChatMessage(
            TEMPLATE_ROLES.get(self.role, self.role), content, calls, self.tool_call_id if self.role == "tool" else None
        )


def _messages(messages: Any) -> Any:
    if isinstance(messages, list) and not messages:
        raise refuse("{path} must hold at least one message")
    return messages


def _answered_calls(messages: list[Message]) -> list[Message]:
    """Each tool message answers a call an earlier assistant message made."""
    made: set[str] = set()
    for i, message in enumerate(messages):
        made.update(call.id for call in message.tool_calls or ())
        if message.role == "tool" and message.tool_call_id not in made:
            earlier = (
                f"the earlier calls are {', '.join(map(repr, sorted(made)))}"
                if made
                else "no earlier assistant message made a tool call"
            )
            raise refuse(
                f"{{path}}[{i}].tool_call_id {message.tool_call_id!r} answers no earlier tool call ({earlier})",
                f"{{path}}[{i}].tool_call_id",
            )
    return messages


Messages = Annotated[list[Message], MinLen(1), BeforeValidator(_messages), AfterValidator(_answered_calls)]


def _is_token_id(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _prompt(prompt: Any) -> Any:
    """The text endpoint's ``prompt`` checked (module docstring); every error names ``prompt``."""
    if prompt is None:
        raise refuse("{path} is required")
    if isinstance(prompt, str):
        if not prompt:
            raise refuse("{path} must not be empty")
        return prompt
    if not isinstance(prompt, list):
        raise refuse(f"{{path}} must be a string, got {describe(prompt)} (or a list of strings or of token ids)")
    if not prompt:
        raise refuse("{path} must not be an empty list")
    if all(_is_token_id(t) for t in prompt):
        return prompt
    if len(prompt) > MAX_PROMPTS:
        raise refuse(f"{{path}} may hold at most {MAX_PROMPTS} prompts, got {len(prompt)}")
    for i, one in enumerate(prompt):
        if isinstance(one, str) and not one:
            raise refuse(f"{{path}}[{i}] must not be empty")
        if not isinstance(one, str) and not (isinstance(one, list) and one and all(_is_token_id(t) for t in one)):
            raise refuse(
                f"{{path}}[{i}] must be a string or a non-empty list of token ids (integers >= 0), got {describe(one)}"
            )
    return prompt


TokenIds = Annotated[list[Annotated[StrictInt, Ge(0)]], MinLen(1)]
OneText = Annotated[StrictStr, MinLen(1)]
PromptField = Annotated[
    Union[OneText, TokenIds, Annotated[list[Union[OneText, TokenIds]], MinLen(1), MaxLen(MAX_PROMPTS)]],
    BeforeValidator(_prompt),
]


def prompts_of(prompt: str | list[Any]) -> tuple[Prompt, ...]:
    """A validated ``prompt`` as a tuple of prompts: texts and tuples of token ids."""
    if isinstance(prompt, str):
        return (prompt,)
    if all(isinstance(t, int) for t in prompt):
        return (tuple(prompt),)
    return tuple(one if isinstance(one, str) else tuple(one) for one in prompt)

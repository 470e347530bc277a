"""The prompt of a completion request: the chat endpoint's ``messages`` or the text endpoint's ``prompt``.

Chat messages (``Message``), as OpenAI's clients send them:

- ``role``: ``system``, ``user``, ``assistant``, or ``developer`` (OpenAI's newer name for the
  system instructions; the chat template gets it as ``system``). A ``tool`` (or ``function``)
  message answers a tool call, and an assistant message with ``tool_calls`` makes one; this server
  runs no tools (a request with ``tools`` is refused), so both are a 400 that says so.
- ``content``: a string, or a list of text parts ``[{"type": "text", "text": ...}]`` joined with
  ``"\\n"`` (as vLLM joins them). Any other part (``image_url``, ``input_audio``, ``file``,
  ``refusal``, ...) is a 400: the served models read text only.
- ``name`` and any other field of a message are ignored.

Text prompts (``/v1/completions``): a string; a list of strings (one prompt each: the answer has a
choice per prompt, in order); a list of token ids; or a list of lists of token ids. At most
``MAX_PROMPTS`` prompts (LangChain's ``OpenAI`` sends up to 20 at a time), none empty. Token ids are
checked against the model's vocabulary where the prompt is encoded (``completions``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union

from annotated_types import Ge, MaxLen, MinLen
from pydantic import BeforeValidator, StrictInt, StrictStr, model_validator

from .errors import describe, refuse
from .types import FALSY, Neutral, RequestBody, absent_as_null

ROLES = ("system", "user", "assistant", "developer")
TEMPLATE_ROLES = {"developer": "system"}  # request role -> the role the chat template gets
TOOL_ROLES = ("tool", "function")
MAX_PROMPTS = 20

Prompt = Union[str, tuple[int, ...]]  # text, or token ids sent as they are


@dataclass(frozen=True)
class ChatMessage:
    """A message as the chat template gets it: ``role`` system, user or assistant; text ``content``."""

    role: str
    content: str

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


class TextPart(RequestBody):
    """A text part of a message's content."""

    type: Literal["text"]
    text: StrictStr


def _role(role: Any) -> Any:
    if role not in ROLES:
        why = " (tool messages answer tool calls, and this server runs no tools)" if role in TOOL_ROLES else ""
        raise refuse(f"{{path}} must be one of {', '.join(ROLES)}, got {describe(role)}{why}")
    return role


def _content(content: Any) -> Any:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise refuse(f"{{path}} must be a string, got {describe(content)} (or a list of text parts)")
    for i, part in enumerate(content):
        where = f"{{path}}[{i}]"
        if not isinstance(part, dict):
            raise refuse(f'{where} must be a part {{"type": "text", "text": "..."}}, got {describe(part)}', where)
        if part.get("type") != "text":
            raise refuse(
                f"{where} is a {describe(part.get('type'))} part; the served model reads text only: "
                'send {"type": "text", "text": "..."} parts',
                where,
            )
        if not isinstance(part.get("text"), str):
            raise refuse(f"{where}.text must be a string, got {describe(part.get('text'))}", f"{where}.text")
    return content


Content = Annotated[Union[StrictStr, list[TextPart]], BeforeValidator(_content)]
NO_TOOL_CALLS = Neutral(lambda v: not v, FALSY, "{parent} holds tool calls; this server runs no tools",
                        "this server runs no tools", "{parent}.tool_calls")


class Message(RequestBody):
    """A chat message: ``developer`` reaches the chat template as ``system``; text parts are joined."""

    role: Annotated[Literal["system", "user", "assistant", "developer"], BeforeValidator(_role)]
    tool_calls: Annotated[Any, NO_TOOL_CALLS] = None
    function_call: Annotated[Any, NO_TOOL_CALLS] = None
    content: Content

    @model_validator(mode="before")
    @classmethod
    def _an_object(cls, message: Any) -> Any:
        if not isinstance(message, dict):
            raise refuse(f"{{path}} must be an object with role and content, got {describe(message)}")
        return absent_as_null(message, ("role", "content"))  # the checks word both alike

    def chat_message(self) -> ChatMessage:
        content = self.content if isinstance(self.content, str) else "\n".join(part.text for part in self.content)
        return ChatMessage(TEMPLATE_ROLES.get(self.role, self.role), content)


def _messages(messages: Any) -> Any:
    if isinstance(messages, list) and not messages:
        raise refuse("{path} must hold at least one message")
    return messages


Messages = Annotated[list[Message], MinLen(1), BeforeValidator(_messages)]


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
            raise refuse(f"{{path}}[{i}] must be a string or a non-empty list of token ids (integers >= 0), got {describe(one)}")
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

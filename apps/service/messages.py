"""The prompt of a completion request: the chat endpoint's ``messages`` or the text endpoint's ``prompt``.

Chat messages, as OpenAI's clients send them:

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
from typing import Any, Mapping, Union

from .fields import RequestError, describe

ROLES = ("system", "user", "assistant", "developer")
TEMPLATE_ROLES = {"developer": "system"}  # request role -> the role the chat template gets
TOOL_ROLES = ("tool", "function")
MAX_PROMPTS = 20

Prompt = Union[str, tuple[int, ...]]  # text, or token ids sent as they are


@dataclass(frozen=True)
class ChatMessage:
    role: str  # as the chat template gets it: system, user or assistant
    content: str

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


def parse_messages(body: Mapping[str, Any]) -> tuple[ChatMessage, ...]:
    """The request's ``messages``, checked, roles mapped for the chat template, contents joined."""
    messages = body.get("messages")
    if messages is None:
        raise RequestError("messages is required", "messages")
    if not isinstance(messages, list):
        raise RequestError(f"messages must be a list, got {describe(messages)}", "messages")
    if not messages:
        raise RequestError("messages must hold at least one message", "messages")
    return tuple(_message(m, f"messages[{i}]") for i, m in enumerate(messages))


def _message(message: Any, param: str) -> ChatMessage:
    if not isinstance(message, dict):
        raise RequestError(f"{param} must be an object with role and content, got {describe(message)}", param)
    role = message.get("role")
    if role not in ROLES:
        why = " (tool messages answer tool calls, and this server runs no tools)" if role in TOOL_ROLES else ""
        raise RequestError(f"{param}.role must be one of {', '.join(ROLES)}, got {describe(role)}{why}", f"{param}.role")
    if message.get("tool_calls") or message.get("function_call"):
        raise RequestError(f"{param} holds tool calls; this server runs no tools", f"{param}.tool_calls")
    return ChatMessage(TEMPLATE_ROLES.get(role, role), _content(message.get("content"), f"{param}.content"))


def _content(content: Any, param: str) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise RequestError(f"{param} must be a string, got {describe(content)} (or a list of text parts)", param)
    texts = []
    for i, part in enumerate(content):
        where = f"{param}[{i}]"
        if not isinstance(part, dict):
            raise RequestError(f'{where} must be a part {{"type": "text", "text": "..."}}, got {describe(part)}', where)
        if part.get("type") != "text":
            raise RequestError(
                f"{where} is a {describe(part.get('type'))} part; the served model reads text only: "
                'send {"type": "text", "text": "..."} parts',
                where,
            )
        if not isinstance(part.get("text"), str):
            raise RequestError(f"{where}.text must be a string, got {describe(part.get('text'))}", f"{where}.text")
        texts.append(part["text"])
    return "\n".join(texts)


def parse_prompts(body: Mapping[str, Any]) -> tuple[Prompt, ...]:
    """The text endpoint's ``prompt`` as a tuple of prompts (module docstring)."""
    prompt = body.get("prompt")
    if prompt is None:
        raise RequestError("prompt is required", "prompt")
    if isinstance(prompt, str):
        return (_text_prompt(prompt, "prompt"),)
    if not isinstance(prompt, list):
        raise RequestError(f"prompt must be a string, got {describe(prompt)} (or a list of strings or of token ids)", "prompt")
    if not prompt:
        raise RequestError("prompt must not be an empty list", "prompt")
    if all(_is_token_id(t) for t in prompt):
        return (tuple(prompt),)
    if len(prompt) > MAX_PROMPTS:
        raise RequestError(f"prompt may hold at most {MAX_PROMPTS} prompts, got {len(prompt)}", "prompt")
    return tuple(_one_of_many(p, f"prompt[{i}]") for i, p in enumerate(prompt))


def _one_of_many(prompt: Any, param: str) -> Prompt:
    if isinstance(prompt, str):
        return _text_prompt(prompt, param)
    if isinstance(prompt, list) and prompt and all(_is_token_id(t) for t in prompt):
        return tuple(prompt)
    raise RequestError(
        f"{param} must be a string or a non-empty list of token ids (integers >= 0), got {describe(prompt)}", "prompt"
    )


def _text_prompt(prompt: str, param: str) -> str:
    if not prompt:
        raise RequestError(f"{param} must not be empty", "prompt")
    return prompt


def _is_token_id(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0

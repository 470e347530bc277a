"""The bodies of the edge verify server's calls (``..edge``): token ids only, and the sampling settings.

A list of token ids is checked for its shape here (a list of integers; empty where the call allows
it); that each id is in the served model's vocabulary, and a draft's probabilities, are checked
where the session is (they depend on the model).
"""

from __future__ import annotations

from typing import Annotated, Any, Callable

from pydantic import BeforeValidator, Field, StrictBool, StrictInt, StrictStr, model_validator

from .chat import Messages
from .errors import describe, refuse
from .openai_fields import Sampling
from .types import Bounds, RequestBody


def _token_ids(allow_empty: bool) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if not isinstance(value, list):
            raise refuse(f"{{path}} must be a list of token ids, got {describe(value)}")
        if not value and not allow_empty:
            raise refuse("{path} must not be empty")
        for i, item in enumerate(value):
            if isinstance(item, bool) or not isinstance(item, int):
                raise refuse(f"{{path}}[{i}] must be an integer, got {describe(item)}")
        return value

    return check


TokenIds = Annotated[list[StrictInt], BeforeValidator(_token_ids(allow_empty=False))]
MaybeNoTokenIds = Annotated[list[StrictInt], BeforeValidator(_token_ids(allow_empty=True))]
ContextLength = Annotated[StrictInt, Bounds(1)]


def _fingerprint(value: Any) -> Any:
    if not isinstance(value, str) or not value:
        raise refuse("{path} is required: the client's tokenizer fingerprint (Tokenizer.fingerprint())")
    return value


class OpenSessionBody(Sampling):
    """``POST /v1/edge/sessions``: exactly one of ``prompt`` (token ids) and ``messages``."""

    # absent: null, which the check words as it words null (validate_default)
    tokenizer: Annotated[StrictStr, BeforeValidator(_fingerprint)] = Field(None, validate_default=True)
    prompt: TokenIds | None = None
    messages: Messages | None = None

    @model_validator(mode="after")
    def _one_prompt(self) -> OpenSessionBody:
        if (self.prompt is None) == (self.messages is None):
            raise refuse("send exactly one of prompt (token ids) and messages (chat messages)", "prompt")
        return self


class Commit(RequestBody):
    """The accepted ``path`` of a verification and the ``next_token`` after it."""

    path: MaybeNoTokenIds
    next_token: Annotated[StrictInt, Bounds(0)]


class VerifyBody(RequestBody):
    """``POST .../verify``: a draft tree, with ``previous`` (the last verification's commit) first."""

    tokens: MaybeNoTokenIds
    parents: MaybeNoTokenIds
    draft_probs: Any = None  # checked against the model's vocabulary where the session is
    commit: StrictBool | None = None
    previous: Commit | None = None
    context_length: ContextLength | None = None

    @model_validator(mode="after")
    def _a_parent_per_token(self) -> VerifyBody:
        if len(self.tokens) != len(self.parents):
            raise refuse(
                f"tokens has {len(self.tokens)} entries but parents {len(self.parents)}: one parent per token",
                "parents",
            )
        return self


class AppendBody(RequestBody):
    """``POST .../append``: the next user turn's tokens."""

    tokens: TokenIds
    context_length: ContextLength | None = None

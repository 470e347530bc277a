"""The bodies of the edge verify server's calls (``..edge``): token ids and the sampling settings.
Token ids are checked for their shape here; against the vocabulary (and a draft's probabilities)
where the session is (they depend on the model).
"""

from __future__ import annotations

from typing import Annotated, Any

from annotated_types import MinLen
from pydantic import Field, StrictBool, StrictInt, StrictStr, model_validator

from .chat import Messages
from .errors import refuse
from .openai_fields import Sampling
from .types import Bounds, RequestBody

TokenIds = Annotated[list[StrictInt], MinLen(1)]
ContextLength = Annotated[StrictInt, Bounds(1)]


class OpenSessionBody(Sampling):
    """``POST /v1/edge/sessions``: exactly one of ``prompt`` (token ids) and ``messages``."""

    tokenizer: Annotated[StrictStr, MinLen(1)] = Field(description="the client's Tokenizer.fingerprint()")
    prompt: TokenIds | None = None
    messages: Messages | None = None

    @model_validator(mode="after")
    def _one_prompt(self) -> OpenSessionBody:
        if (self.prompt is None) == (self.messages is None):
            raise refuse("send exactly one of prompt (token ids) and messages (chat messages)", "prompt")
        return self


class Commit(RequestBody):
    """The accepted ``path`` of a verification and the ``next_token`` after it."""

    path: list[StrictInt]
    next_token: Annotated[StrictInt, Bounds(0)]


class VerifyBody(RequestBody):
    """``POST .../verify``: a draft tree, with ``previous`` (the last verification's commit) first."""

    tokens: list[StrictInt]
    parents: list[StrictInt]
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

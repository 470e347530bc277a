"""ServedText: the text side of a model whose passes run elsewhere (a serving engine, a remote server).

Such a model encodes, renders chats and decodes through ``local``, a model on this machine that shares
the served model's tokenizer, and keeps no session (KV cache) here: ``new_session`` raises
``SessionsUnavailableError``. ``served_by`` finishes the sentence of that error ("... runs on a serving
engine").
"""

from __future__ import annotations

from typing import Any, NoReturn, Sequence

from .constrained.grammar import GrammarCompiler, GrammarUnavailableError
from .session import SessionsUnavailableError


class ServedText:
    name: str
    local: Any
    served_by: str = "runs elsewhere"

    def encode(self, text: str) -> list[int]:
        return self.local.encode(text)

    def encode_chat(self, messages: Sequence[dict], tools: Sequence[dict] | None = None) -> list[int]:
        return self.local.encode_chat(messages, tools)

    def decode(self, ids: Sequence[int]) -> str:
        return self.local.decode(ids)

    def grammar_compiler(self) -> GrammarCompiler:
        """``GrammarUnavailableError``: nothing here to mask (a model whose engine ranks candidates overrides it)."""
        raise GrammarUnavailableError(f"{self.name} {self.served_by}, which returns no logits to constrain")

    def new_session(self) -> NoReturn:
        raise SessionsUnavailableError(
            f"{self.name} {self.served_by}, which keeps no session (KV cache) on this machine"
        )

"""HFTokenizer: a transformers (Hugging Face) tokenizer behind specdraft's ``Tokenizer`` protocol."""

from __future__ import annotations

from functools import cached_property
from typing import Any, Sequence

from ...model import vocabulary_fingerprint


class HFTokenizer:
    def __init__(self, hf_tokenizer: Any) -> None:
        self.hf = hf_tokenizer

    @property
    def vocab_size(self) -> int:
        return len(self.hf)

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return list(self.hf(text, add_special_tokens=add_special_tokens).input_ids)

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """``encode`` of each text (no special tokens added), in one call (fast tokenizers parallelise)."""
        return [list(ids) for ids in self.hf(list(texts), add_special_tokens=False)["input_ids"]]

    def decode(self, ids: Sequence[int]) -> str:
        return self.hf.decode(list(ids), skip_special_tokens=True)

    @cached_property
    def _fingerprint(self) -> str:
        return vocabulary_fingerprint(self.hf.convert_ids_to_tokens(list(range(len(self.hf)))))

    def fingerprint(self) -> str:
        return self._fingerprint

    @property
    def chat_template(self) -> str | None:
        return getattr(self.hf, "chat_template", None) or None

    def apply_chat_template(self, messages: Sequence[dict], tools: Sequence[dict] | None = None) -> str:
        """The chat template's text for ``messages``, ending where the assistant's answer starts;
        ``tools`` (OpenAI's function tools) go to the template as ``tools`` (None: no tools)."""
        return self.hf.apply_chat_template(
            list(messages), tools=list(tools) if tools is not None else None, add_generation_prompt=True, tokenize=False
        )

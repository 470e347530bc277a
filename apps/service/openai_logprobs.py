"""Spelling the target's log-probabilities (``specdraft.logprobs.TokenLogprob``) as OpenAI's API does.

- chat: ``{"content": [{"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob", "bytes"}]}]}``;
- text completions: ``{"tokens", "token_logprobs", "top_logprobs": [{token: logprob}], "text_offset"}``.

A token's ``token`` is its own text, decoded alone (special tokens decode to ""; a token that holds
part of a UTF-8 character shows U+FFFD, and ``bytes`` are that text's UTF-8); ``text_offset`` counts
characters of those texts from the start of the answer. Values are the target's log-probabilities
under its raw logits (before temperature, top-k and top-p), one entry per generated token (an EOS
that ended the answer included); ``-inf`` is written as ``FLOOR`` (JSON has no infinity).
"""

from __future__ import annotations

from typing import Any, Sequence

from specdraft import Tokenizer, TokenLogprob

FLOOR = -9999.0  # what OpenAI reports for a token the model gives no chance


class LogprobWriter:
    """One choice's logprobs, chunk by chunk (``text_offset`` continues across chunks)."""

    def __init__(self, tokenizer: Tokenizer, chat: bool) -> None:
        self.tokenizer = tokenizer
        self.chat = chat
        self.offset = 0
        self._texts: dict[int, str] = {}

    def __call__(self, entries: Sequence[TokenLogprob]) -> dict[str, Any]:
        """The ``logprobs`` object of a choice (or a streamed chunk) holding ``entries``."""
        if self.chat:
            return {
                "content": [
                    {**self._token(e.token, e.logprob), "top_logprobs": [self._token(t, lp) for t, lp in e.top]}
                    for e in entries
                ]
            }
        offsets = []
        for entry in entries:
            offsets.append(self.offset)
            self.offset += len(self._text(entry.token))
        return {
            "tokens": [self._text(e.token) for e in entries],
            "token_logprobs": [_value(e.logprob) for e in entries],
            "top_logprobs": [{self._text(t): _value(lp) for t, lp in e.top} for e in entries],
            "text_offset": offsets,
        }

    def _token(self, token: int, logprob: float) -> dict[str, Any]:
        text = self._text(token)
        return {"token": text, "logprob": _value(logprob), "bytes": list(text.encode("utf-8"))}

    def _text(self, token: int) -> str:
        if token not in self._texts:
            self._texts[token] = self.tokenizer.decode([token])
        return self._texts[token]


def _value(logprob: float) -> float:
    return logprob if logprob > FLOOR else FLOOR

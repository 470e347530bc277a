"""Turning generated token ids into text pieces: incremental detokenisation and stop strings.

``TextAssembler.push(token, source)`` returns the pieces that became final: a piece is never
emitted while it might still turn into part of a stop string or an incomplete UTF-8 character.
Concatenating every emitted piece gives exactly the final text (stop string excluded). Each piece
holds the text of one token (``TextPiece.token``: its index among the pushed tokens), so a caller can
join pieces with what it knows per token (log-probabilities, who confirmed it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Sequence

if TYPE_CHECKING:
    from .model import Tokenizer

Source = Literal["draft", "target"]
INCOMPLETE = "\ufffd"  # what a tokenizer decodes a partial UTF-8 sequence to


@dataclass(frozen=True)
class TextPiece:
    """A piece of generated text. ``source`` is "draft" when the drafter proposed the token and the
    target accepted it, "target" when the target chose it itself. ``token``: the index, among the
    generated tokens, of the token whose text this is (the last one where a character spans several;
    None for a piece not cut from a generation)."""

    text: str
    source: Source
    token: int | None = None


class IncrementalDecoder:
    """Decodes a growing token list piece by piece (the prefix/read offset scheme)."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer
        self.ids: list[int] = []
        self._prefix = 0  # start of the window re-decoded for context
        self._read = 0  # tokens whose text has been returned

    def _decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(ids)

    def push(self, token: int) -> str:
        self.ids.append(token)
        seen = self._decode(self.ids[self._prefix : self._read])
        full = self._decode(self.ids[self._prefix :])
        if len(full) > len(seen) and not full.endswith(INCOMPLETE):
            self._prefix, self._read = self._read, len(self.ids)
            return full[len(seen) :]
        return ""

    def flush(self) -> str:
        seen = self._decode(self.ids[self._prefix : self._read])
        full = self._decode(self.ids[self._prefix :])
        self._prefix = self._read = len(self.ids)
        return full[len(seen) :]


class TextAssembler:
    """Collects decoded text per token and releases pieces that are final.

    ``stopped`` becomes True when the text contains a stop string; ``text`` is then cut just
    before it. Pieces keep the source of the token that produced them.
    """

    def __init__(self, tokenizer: Tokenizer, stop: Sequence[str] = ()) -> None:
        self.decoder = IncrementalDecoder(tokenizer)
        self.stop = tuple(s for s in stop if s)
        self.emitted = ""
        self._held: list[TextPiece] = []  # decoded but not released
        self.stopped = False

    @property
    def text(self) -> str:
        return self.emitted

    def push(self, token: int, source: Source) -> list[TextPiece]:
        if self.stopped:
            raise RuntimeError("push() after a stop string")
        delta = self.decoder.push(token)
        if delta:
            self._held.append(TextPiece(delta, source, len(self.decoder.ids) - 1))
        return self._release(final=False)

    def finish(self) -> list[TextPiece]:
        if not self.stopped:
            tail = self.decoder.flush()
            if tail:
                last = self._held[-1] if self._held else TextPiece("", "target", len(self.decoder.ids) - 1)
                self._held.append(TextPiece(tail, last.source, last.token))
        return self._release(final=True)

    def _release(self, final: bool) -> list[TextPiece]:
        held = "".join(p.text for p in self._held)
        keep = len(held)
        window = self.emitted[-max((len(s) for s in self.stop), default=0) :] + held
        offset = len(window) - len(held)  # where `held` starts inside `window`
        hits = [window.find(s) for s in self.stop]
        hits = [h for h in hits if h >= 0]
        if hits:
            self.stopped = True
            keep = max(0, min(hits) - offset)
        elif not final:
            keep -= _longest_stop_prefix_suffix(window, self.stop)
            keep = max(keep, 0)
        released = _take(self._held, keep)
        self._held = [] if self.stopped or final else _drop(self._held, keep)
        self.emitted += "".join(p.text for p in released)
        return released


def merge_pieces(pieces: list[TextPiece]) -> list[TextPiece]:
    """``pieces`` with adjacent pieces of the same source joined (and empty ones dropped); a joined
    piece's ``token`` is its first piece's."""
    merged: list[TextPiece] = []
    for piece in pieces:
        if not piece.text:
            continue
        if merged and merged[-1].source == piece.source:
            merged[-1] = TextPiece(merged[-1].text + piece.text, piece.source, merged[-1].token)
        else:
            merged.append(piece)
    return merged


def _longest_stop_prefix_suffix(text: str, stops: Sequence[str]) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of some stop string."""
    best = 0
    for stop in stops:
        for n in range(min(len(stop) - 1, len(text)), best, -1):
            if text.endswith(stop[:n]):
                best = n
                break
    return best


def _take(pieces: list[TextPiece], n_chars: int) -> list[TextPiece]:
    out: list[TextPiece] = []
    for piece in pieces:
        if n_chars <= 0:
            break
        out.append(TextPiece(piece.text[:n_chars], piece.source, piece.token))
        n_chars -= len(piece.text)
    return out


def _drop(pieces: list[TextPiece], n_chars: int) -> list[TextPiece]:
    out: list[TextPiece] = []
    for piece in pieces:
        if n_chars >= len(piece.text):
            n_chars -= len(piece.text)
            continue
        out.append(TextPiece(piece.text[n_chars:], piece.source, piece.token))
        n_chars = 0
    return out

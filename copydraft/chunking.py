"""Splitting a document into chunks that are corrected one by one, and putting it back together.

A chunk is a paragraph (text between blank lines), or a sentence of a paragraph longer than
``max_chars``. Only a chunk's ``core`` (without its surrounding whitespace) goes to the model; the
separators and surrounding whitespace are kept verbatim, so reassembling never loses a space or a
line break: ``"".join(c.lead + c.core + c.trail for c in split(text)) == text``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+")


@dataclass(frozen=True)
class Chunk:
    lead: str  # whitespace before the core
    core: str  # the text to correct ("" for whitespace-only pieces)
    trail: str  # whitespace after the core


def _pieces(text: str, pattern: re.Pattern) -> list[str]:
    """``text`` cut after every match of ``pattern`` (each piece keeps its separator)."""
    pieces, start = [], 0
    for match in pattern.finditer(text):
        pieces.append(text[start : match.end()])
        start = match.end()
    if start < len(text):
        pieces.append(text[start:])
    return pieces


def _chunk(piece: str) -> Chunk:
    core = piece.strip()
    if not core:
        return Chunk(piece, "", "")
    lead = piece[: len(piece) - len(piece.lstrip())]
    trail = piece[len(piece.rstrip()) :]
    return Chunk(lead, core, trail)


def split(text: str, max_chars: int = 1200) -> list[Chunk]:
    chunks: list[Chunk] = []
    for paragraph in _pieces(text, _PARAGRAPH_BREAK):
        if len(paragraph.strip()) <= max_chars:
            chunks.append(_chunk(paragraph))
        else:
            chunks.extend(_chunk(sentence) for sentence in _pieces(paragraph, _SENTENCE_END))
    return chunks


def join(chunks: list[Chunk], cores: list[str]) -> str:
    """The document with each chunk's core replaced by ``cores[i]``."""
    return "".join(c.lead + core + c.trail for c, core in zip(chunks, cores, strict=True))

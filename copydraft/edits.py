"""Edits between an original text and its correction, as character spans of the original.

Texts are compared as sequences of words, runs of whitespace and single punctuation marks, so an
edit reads like a person's ("go" -> "goes"), never half a word. Applying the edits of
``diff(a, b)`` to ``a`` gives ``b`` exactly.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import asdict, dataclass

_TOKEN = re.compile(r"\w+|\s+|[^\w\s]", re.UNICODE)


@dataclass(frozen=True)
class Edit:
    start: int  # character offset in the original (inclusive)
    end: int  # character offset in the original (exclusive); start == end for an insertion
    original: str
    replacement: str

    def to_dict(self) -> dict:
        return asdict(self)


def _tokens(text: str) -> list[tuple[int, str]]:
    return [(m.start(), m.group()) for m in _TOKEN.finditer(text)]


def diff(original: str, corrected: str) -> list[Edit]:
    a, b = _tokens(original), _tokens(corrected)
    matcher = difflib.SequenceMatcher(a=[t for _, t in a], b=[t for _, t in b], autojunk=False)
    edits = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        start = a[i1][0] if i1 < len(a) else len(original)
        end = a[i2 - 1][0] + len(a[i2 - 1][1]) if i2 > i1 else start
        replacement = "".join(t for _, t in b[j1:j2])
        edits.append(Edit(start, end, original[start:end], replacement))
    return edits


def apply(original: str, edits: list[Edit]) -> str:
    """``original`` with every edit applied (edits must not overlap)."""
    out, cursor = [], 0
    for edit in sorted(edits, key=lambda e: (e.start, e.end)):
        if edit.start < cursor or original[edit.start : edit.end] != edit.original:
            raise ValueError(f"edit {edit} does not fit the text")
        out.append(original[cursor : edit.start])
        out.append(edit.replacement)
        cursor = edit.end
    out.append(original[cursor:])
    return "".join(out)

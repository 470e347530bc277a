"""scan_parts: the start of a text matched against a sequence of literals and JSON strings, with
whitespace between them: a match, ``NEED_MORE`` (a proper prefix of one) or ``NO_MATCH``."""

from __future__ import annotations

import json

NEED_MORE = True  # a scan that needs more text to decide
NO_MATCH = False
_WHITESPACE = " \t\r\n"


def scan_parts(text: str, parts: tuple[str | None, ...]) -> tuple[str | None, int] | bool:
    """Match ``parts`` (literals; None: a JSON string) at the start of ``text``, whitespace allowed
    before each: ``(the string's value, end of the match)``, ``NEED_MORE`` when ``text`` is a proper
    prefix of a match, ``NO_MATCH`` when it cannot become one."""
    i, value = 0, None
    for part in parts:
        while i < len(text) and text[i] in _WHITESPACE:
            i += 1
        if i == len(text):
            return NEED_MORE
        if part is None:
            end = _string_end(text, i)
            if end is NEED_MORE or end is NO_MATCH:
                return end
            try:
                value = json.loads(text[i:end])
            except ValueError:
                return NO_MATCH
            i = end
            continue
        chunk = text[i: i + len(part)]
        if not part.startswith(chunk):
            return NO_MATCH
        if len(chunk) < len(part):
            return NEED_MORE
        i += len(part)
    return value, i


def _string_end(text: str, start: int) -> int | bool:
    """End of the JSON string that starts at ``text[start]`` (NEED_MORE / NO_MATCH as ``scan_parts``)."""
    if text[start] != '"':
        return NO_MATCH
    i = start + 1
    while i < len(text):
        char = text[i]
        if char == "\\":
            i += 2
            continue
        if char == '"':
            return i + 1
        if char < " ":
            return NO_MATCH
        i += 1
    return NEED_MORE

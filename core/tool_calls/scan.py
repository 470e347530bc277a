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
        chunk = text[i : i + len(part)]
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


class JsonBrackets:
    """The nesting of brackets in JSON text read piece by piece (brackets inside strings, and escaped
    quotes, do not count): where the value that was open closes."""

    def __init__(self, depth: int = 0) -> None:
        self.depth = depth  # brackets open
        self._in_string = False
        self._escaped = False  # after a backslash in a string

    def close(self, text: str, start: int = 0) -> int | None:
        """Read ``text[start:]``: the index just after the bracket that brings the depth to 0, or None
        when all of it was read and the value is still open."""
        for i in range(start, len(text)):
            char = text[i]
            if self._escaped:
                self._escaped = False
            elif self._in_string:
                if char == "\\":
                    self._escaped = True
                elif char == '"':
                    self._in_string = False
            elif char == '"':
                self._in_string = True
            elif char in "{[":
                self.depth += 1
            elif char in "}]":
                self.depth -= 1
                if self.depth == 0:
                    return i + 1
        return None

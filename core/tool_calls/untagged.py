"""UntaggedCalls: a reply that is nothing but tool calls written without the ``<tool_call>`` tags.

Small models (qwen2.5-coder-0.5b in auto mode) often answer a call as the bare JSON object, or that
object in a ```json code fence, instead of the tagged block their template asks for. As llama.cpp's
Hermes parser does, such a reply is read as calls when, whole, it is: optional whitespace, an
optional fence opening (```` ``` ```` or ```` ```json ````), then one or more JSON objects
``{"name": <a tool's name>, "arguments": {...}}`` one after another (or one JSON array of them),
``"parameters"`` accepted in place of ``"arguments"``, each object with ``"name"`` first and no other
key, then only whitespace (and, when a fence was opened, its closing ```` ``` ````, or none: a reply
may end inside its fence). Anything else is not (it stays content).

The reader is fed the reply as it comes and says, as early as the text allows, when the reply can no
longer be such calls (``NO_MATCH``); while it still can (``NEED_MORE``) the stream holds the text
back, and ``end`` decides at the reply's end. Its work per character is constant (a brace scanner;
each object is parsed once, when it closes).

An ``UntaggedStyle`` adapts the reader to a family whose calls are untagged by design (``llama3``,
``mistral``): ``prefixes`` (a marker that may open the reply, such as ``<|python_tag|>`` or
``[TOOL_CALLS]``, absent when the tokenizer's decode left the special token out), ``extra_keys`` (keys a
call object may hold besides its name and arguments, such as Mistral's ``"id"``) and ``separators``
(characters allowed between two objects besides whitespace). The default style is the Hermes
reader's, as described above. Without tool names (``None``) any name is a call's.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass

from .scan import NEED_MORE, NO_MATCH, JsonBrackets, scan_parts

_WHITESPACE = " \t\r\n"
_FENCE = "```"
_LANGUAGE = "json"
_HEADER = ("{", '"name"', ":", None)  # None: the name (a JSON string)
_ARGUMENT_KEYS = ("arguments", "parameters")


@dataclass(frozen=True)
class UntaggedStyle:
    """What a family's untagged calls may hold beyond the Hermes reader's (module docstring)."""

    prefixes: tuple[str, ...] = ()  # markers that may open the reply, once, before anything else
    extra_keys: frozenset[str] = frozenset()  # keys a call object may have besides name and arguments
    separators: str = ""  # characters allowed between two objects besides whitespace


class UntaggedCalls:
    """One reply's untagged-call reader (module docstring): ``feed`` each new piece, then ``end``.
    ``tool_names``: the names a call may have (None: any)."""

    def __init__(self, tool_names: Collection[str] | None, style: UntaggedStyle = UntaggedStyle()) -> None:
        self._names = None if tool_names is None else frozenset(tool_names)
        self._style = style
        self._prefixed = False  # a prefix has been read
        self._text = ""
        self._pos = 0  # next character to scan
        self._phase = "lead"  # lead | language | open | header | value | between | closed
        self._fenced = False
        self._start = 0  # where the current value began
        self._brackets = JsonBrackets()  # the current value's nesting
        self._array = False  # the current value is an array of calls
        self._calls: list[tuple[str, str]] = []
        self._failed = False

    def feed(self, text: str) -> bool:
        """Add ``text``; ``NO_MATCH`` once the reply cannot be untagged calls, else ``NEED_MORE``."""
        if not self._failed:
            self._text += text
            self._failed = not self._scan()
        return NO_MATCH if self._failed else NEED_MORE

    def end(self) -> list[tuple[str, str]] | None:
        """At the reply's end: its calls as ``(name, arguments' JSON text)``, or None when it is not
        untagged calls."""
        if self._failed or not self._calls or self._phase not in ("between", "closed"):
            return None
        return list(self._calls)

    # --- the scanner: False as soon as the text cannot match -------------------------------------
    def _scan(self) -> bool:
        text = self._text
        while self._pos < len(text):
            phase, char = self._phase, text[self._pos]
            if phase in ("lead", "open", "between", "closed") and char in _WHITESPACE:
                self._pos += 1
            elif phase == "lead" and not self._prefixed and (prefix := self._prefix()) is not None:
                if prefix is NEED_MORE:
                    return True
                self._pos += int(prefix)
                self._prefixed = True
            elif phase == "between" and char in self._style.separators:
                self._pos += 1
            elif phase in ("lead", "between") and char == "`":
                if not _FENCE.startswith(text[self._pos : self._pos + len(_FENCE)]):
                    return False
                if len(text) - self._pos < len(_FENCE):
                    return True
                if phase == "between" and not self._fenced:
                    return False
                self._pos += len(_FENCE)
                self._phase = "language" if phase == "lead" else "closed"
                self._fenced = True
            elif phase == "language":
                chunk = text[self._pos : self._pos + len(_LANGUAGE)]
                if chunk and _LANGUAGE.startswith(chunk):
                    if len(chunk) < len(_LANGUAGE):
                        return True
                    self._pos += len(_LANGUAGE)
                self._phase = "open"
            elif char == "{" and phase in ("lead", "open", "between") or char == "[" and phase in ("lead", "open"):
                if phase == "between" and self._array:
                    return False
                self._start, self._array = self._pos, char == "["
                self._brackets = JsonBrackets()
                self._phase = "header"
            elif phase == "header":
                first = self._start + 1 if self._array else self._start  # an array: its first object
                found = _scan_header(text[first:].lstrip(_WHITESPACE))
                if found is NEED_MORE:
                    return True
                if found is NO_MATCH or not self._known(found):
                    return False
                self._phase = "value"
            elif phase == "value":
                if self._scan_value():
                    if not self._close_value():
                        return False
                    self._phase = "between"
            else:
                return False
        return True

    def _prefix(self) -> int | bool | None:
        """At the reply's lead: the length of the style's prefix that starts there, NEED_MORE while the
        text so far is a proper prefix of one, None when none starts there."""
        rest = self._text[self._pos :]
        for prefix in self._style.prefixes:
            if rest.startswith(prefix):
                return len(prefix)
            if prefix.startswith(rest):
                return NEED_MORE
        return None

    def _known(self, name: object) -> bool:
        return isinstance(name, str) and (self._names is None or name in self._names)

    def _scan_value(self) -> bool:
        """Scan on through the current value; True when its closing bracket has been read."""
        end = self._brackets.close(self._text, self._pos)
        self._pos = len(self._text) if end is None else end
        return end is not None

    def _close_value(self) -> bool:
        """The value just read, parsed: its calls added, or False when it is not calls."""
        try:
            value = json.loads(self._text[self._start : self._pos])
        except ValueError:
            return False
        objects = value if isinstance(value, list) else [value]
        calls = [self._call(item) for item in objects]
        if not calls or any(call is None for call in calls):
            return False
        self._calls.extend(calls)  # type: ignore[arg-type]
        return True

    def _call(self, item: object) -> tuple[str, str] | None:
        """``item`` as ``(name, arguments' JSON text)`` when it is a call of a known name: its name, one
        arguments key, and no other key than the style's extra ones."""
        if not isinstance(item, dict) or not self._known(item.get("name")):
            return None
        keys = [key for key in _ARGUMENT_KEYS if key in item]
        if len(keys) != 1 or not isinstance(item[keys[0]], dict):
            return None
        if not set(item) - {"name", keys[0]} <= self._style.extra_keys:
            return None
        return item["name"], json.dumps(item[keys[0]], ensure_ascii=False)


def _scan_header(text: str) -> str | bool:
    """The name of an object that starts ``{"name": "..."`` at ``text``'s start, NEED_MORE while
    ``text`` is a proper prefix of that, NO_MATCH when it cannot be."""
    found = scan_parts(text, _HEADER)
    if isinstance(found, bool):  # NEED_MORE or NO_MATCH
        return found
    name = found[0]
    return name if isinstance(name, str) else NO_MATCH

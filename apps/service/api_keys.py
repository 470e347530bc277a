"""API keys and their scopes (docs/deployment.md): the key file (one key per line, then ``read``, the
default, or ``write``; ``#`` comments), keys of at least ``MIN_KEY_LENGTH`` characters, each listed
once. Keys are kept only as SHA-256 digests and compared with ``hmac.compare_digest`` against every
listed key (the time does not depend on which matched); a key is named by ``Principal.key_id``, a
short digest prefix, and never logged or echoed.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from pathlib import Path

READ, WRITE = "read", "write"
SCOPES = (READ, WRITE)
MIN_KEY_LENGTH = 16


class KeyFileError(ValueError):
    """The key file is missing, unreadable or malformed (the message names the line)."""


@dataclass(frozen=True)
class Principal:
    """Who made a request: the key's id (a digest prefix, safe to log) and its scope."""

    key_id: str
    scope: str

    def may(self, scope: str) -> bool:
        """Whether this key's scope covers ``scope`` (write covers read)."""
        return self.scope == WRITE or scope == READ


@dataclass(frozen=True)
class _Entry:
    digest: bytes
    scope: str


class KeyRing:
    """The keys a server accepts. ``KeyRing.load(path)`` reads a key file; ``check(key)`` answers
    the key's ``Principal`` or None."""

    def __init__(self, keys: dict[str, str]) -> None:
        """``keys``: key -> scope."""
        if not keys:
            raise KeyFileError("no API keys given")
        for key, scope in keys.items():
            _check_key(key, scope)
        self._entries = tuple(_Entry(_digest(key), scope) for key, scope in keys.items())

    @classmethod
    def load(cls, path: str | Path) -> "KeyRing":
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as error:
            raise KeyFileError(f"cannot read the API key file {str(path)!r}: {error}") from None
        keys: dict[str, str] = {}
        for number, line in enumerate(lines, 1):
            fields = line.split()
            if not fields or fields[0].startswith("#"):
                continue
            if len(fields) > 2:
                raise KeyFileError(f"{path}:{number}: expected 'KEY [read|write]', got {len(fields)} fields")
            key, scope = fields[0], (fields[1] if len(fields) == 2 else READ)
            try:
                _check_key(key, scope)
            except KeyFileError as error:
                raise KeyFileError(f"{path}:{number}: {error}") from None
            if key in keys:
                raise KeyFileError(f"{path}:{number}: this key is listed twice")
            keys[key] = scope
        if not keys:
            raise KeyFileError(f"the API key file {str(path)!r} lists no keys")
        return cls(keys)

    def __len__(self) -> int:
        return len(self._entries)

    def check(self, key: str) -> Principal | None:
        """The principal of ``key``, or None when it is not listed (constant time in the key)."""
        digest = _digest(key)
        found: _Entry | None = None
        for entry in self._entries:  # every entry is compared, whatever matched
            if hmac.compare_digest(entry.digest, digest):
                found = entry
        return None if found is None else Principal(found.digest.hex()[:12], found.scope)


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()


def _check_key(key: str, scope: str) -> None:
    if scope not in SCOPES:
        raise KeyFileError(f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")
    if len(key) < MIN_KEY_LENGTH:
        raise KeyFileError(f"a key must be at least {MIN_KEY_LENGTH} characters long (got {len(key)})")
    if any(c.isspace() for c in key):
        raise KeyFileError("a key must not contain whitespace")

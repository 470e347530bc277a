"""Reading a user's UTF-8 text file with errors that say what went wrong (for the command line)."""

from __future__ import annotations

import os


def read_utf8(path: str | os.PathLike[str], error: type[ValueError] = ValueError) -> str:
    """The text of the file at ``path``; ``error`` (a ValueError) names the file when it cannot be
    read or is not UTF-8."""
    try:
        with open(path, encoding="utf-8") as file:
            return file.read()
    except OSError as cause:
        raise error(f"cannot read {path}: {cause.strerror or cause}") from None
    except UnicodeDecodeError as cause:
        raise error(f"cannot read {path}: not UTF-8 text ({cause.reason})") from None

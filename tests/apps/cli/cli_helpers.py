"""Shared by the `specdraft ask` command-line tests: a saved MiniLM index of some documents, and one
run of the command with its exit code and output."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from specdraft.apps.cli import main
from specdraft.retrieval.index import DocumentIndex


def saved_index(folder: Path, documents: Sequence[dict]) -> Path:
    """``documents`` in a new index (the packaged all-MiniLM-L6-v2) saved to ``folder``."""
    index = DocumentIndex.create()
    index.add(list(documents))
    index.save(folder)
    return folder


def ask(capsys, *args: str) -> tuple[int, str, str]:
    """``specdraft ask --device cpu ARGS``: its exit code, standard output and standard error."""
    code = main(["ask", "--device", "cpu", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err

"""IndexStore: the service's named document indexes, one folder each under a root folder.

Contract:
- A name is 1-64 characters of letters, digits, ``_``, ``-`` and ``.`` (not starting with ``.``);
  index ``NAME`` lives in ``root/NAME`` (see ``DocumentIndex.save``). Nothing outside ``root`` is
  ever read or written.
- ``get(name)`` loads an index once and keeps it; searches on it never change it.
- ``add(name, documents)`` works on a **fresh copy** loaded from disk (or a new index when there is
  none), adds, saves atomically and only then replaces the kept index. Whatever fails (a bad
  document, an embedding error, a full disk) leaves the folder and the kept index as they were.
  Adds to one index run one at a time; searches go on meanwhile against the kept index.
- Every index is loaded with the service's one embedder; an index built with another embedding
  model raises ``EmbedderMismatchError`` (nothing is changed).
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from specdraft.retrieval.embedder import TextEmbedder
from specdraft.retrieval.index import DocumentIndex, IndexNotFoundError

from .protocol.responses import DocumentsAdded, answer

NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}")


class TicketLock:
    """A first-come, first-served lock: a thread that releases it and asks again queues behind the
    threads already waiting (``threading.Lock`` lets it barge back in, starving them)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._next = 0  # the next ticket to hand out
        self._serving = 0  # the ticket that holds the lock

    def __enter__(self) -> None:
        with self._cond:
            ticket = self._next
            self._next += 1
            self._cond.wait_for(lambda: self._serving == ticket)

    def __exit__(self, *exc: object) -> None:
        with self._cond:
            self._serving += 1
            self._cond.notify_all()


class SerializedEmbedder:
    """An embedder shared by every request: one batch of at most ``BATCH`` texts is encoded at a
    time (the model's tokenizer may not be used by two threads at once), and a long call (adding
    many documents) takes the lock per batch, so a question's embedding waits for one batch at most,
    not for the whole add."""

    BATCH = 32

    def __init__(self, embedder: TextEmbedder) -> None:
        self.inner = embedder
        self._lock = TicketLock()

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    def encode(self, texts: Sequence[str], progress: bool = False) -> np.ndarray:
        if len(texts) <= self.BATCH:
            with self._lock:
                return self.inner.encode(texts, progress=progress)
        parts = []
        for start in range(0, len(texts), self.BATCH):
            with self._lock:
                parts.append(self.inner.encode(texts[start : start + self.BATCH], progress=False))
        return np.concatenate(parts, axis=0)


class IndexStore:
    """Named indexes under ``root`` (created on the first add), embedded with ``embedder``."""

    def __init__(self, root: str | Path, embedder: TextEmbedder) -> None:
        self.root = Path(root).expanduser()
        self.embedder = SerializedEmbedder(embedder)
        self._kept: dict[str, DocumentIndex] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()  # guards _locks

    @staticmethod
    def valid_name(name: str) -> bool:
        return NAME.fullmatch(name) is not None

    def folder(self, name: str) -> Path:
        if not self.valid_name(name):
            raise ValueError(f"bad index name {name!r}")
        return self.root / name

    def names(self) -> list[str]:
        """The indexes on disk, sorted."""
        if not self.root.is_dir():
            return []
        return sorted(
            p.name for p in self.root.iterdir() if self.valid_name(p.name) and (p / "manifest.json").is_file()
        )

    def get(self, name: str) -> DocumentIndex:
        """The index ``name``; IndexNotFoundError when there is none, EmbedderMismatchError or
        CorruptIndexError when it cannot be used."""
        if name in self._kept:
            return self._kept[name]
        with self._name_lock(name):  # loaded once, by the first caller (a later one waits for it)
            if name not in self._kept:
                self._kept[name] = DocumentIndex.load(self.folder(name), self.embedder)
            return self._kept[name]

    def add(self, name: str, documents: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """Add ``documents`` to index ``name`` (created when missing; see the module docstring); the
        answer's body (``DocumentsAdded``: what was added, and the documents and chunks in the index now)."""
        folder = self.folder(name)
        with self._name_lock(name):
            try:
                index, created = DocumentIndex.load(folder, self.embedder), False
            except IndexNotFoundError:
                index, created = DocumentIndex.create(embedder=self.embedder), True
            before = index.documents
            chunks = index.add(documents)
            self.root.mkdir(parents=True, exist_ok=True)
            index.save(folder)
            self._kept[name] = index  # only now do searches see the added documents
        added = {"documents": index.documents - before, "chunks": chunks}
        return answer(
            DocumentsAdded, index=name, created=created, added=added, documents=index.documents, chunks=len(index)
        )

    def _name_lock(self, name: str) -> threading.Lock:
        with self._lock:
            return self._locks.setdefault(name, threading.Lock())

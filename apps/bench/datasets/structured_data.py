"""The structured-output benchmark's data (``specdraft bench structured``): real documents, a JSON
schema to extract a record into, and a tool whose arguments are filled from the document.

Two tasks, ``limit`` documents each (``structured_items``):

* ``extract``: a BBC news article (the ``summarization`` pool's bigbench gem/xsum articles, at most
  ``MAX_WORDS`` words) and ``EXTRACTION_SCHEMA``: the people, organisations, places, dates and amounts the article
  names, each a list of at most ``MAX_ITEMS`` strings of at most ``MAX_CHARS`` characters. The answer is a
  JSON object (``response_format`` ``json_schema``).
* ``tool-call``: a New York Times passage (the ``rag-reading`` pool's squad_shifts nyt paragraphs, at
  most ``MAX_WORDS`` words) and ``TOOLS``: the model must call ``save_people`` (``TOOL_CHOICE``, a
  named choice) with the people the passage names (at most ``MAX_ITEMS``) and what it says about each
  (at most ``MAX_DESCRIPTION`` characters); the tool set is in the prompt (the chat template's tools
  section).

Order: each task's documents are shuffled with ``random.Random`` seeded from the task's name and
``seed``, so a set is a pure function of ``(limit, seed)`` and a smaller ``limit`` gives a prefix.
Nothing here decodes text or builds grammars; ``structured_bench`` does.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from .bigbench_data import rag_passages, summarization_articles

__all__ = [
    "EXTRACTION_SCHEMA",
    "EXTRACT_INSTRUCTION",
    "MAX_CHARS",
    "MAX_DESCRIPTION",
    "MAX_ITEMS",
    "MAX_WORDS",
    "TASKS",
    "TOOLS",
    "TOOL_CHOICE",
    "TOOL_INSTRUCTION",
    "StructuredItem",
    "structured_items",
]

TASKS = ("extract", "tool-call")
MAX_WORDS = 250  # the longest document kept: keeps a prompt under ~400 tokens (the prefill is every method's)
MAX_ITEMS = 4  # the longest list of a record, and
MAX_CHARS = 48  # the longest string of one: together they bound an answer's length
MAX_DESCRIPTION = 96  # the longest description of a person in a tool call

_STRINGS = {"type": "array", "items": {"type": "string", "maxLength": MAX_CHARS}, "maxItems": MAX_ITEMS}
ENTITY_KEYS = ("people", "organisations", "places", "dates", "amounts")
EXTRACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {key: _STRINGS for key in ENTITY_KEYS},
    "required": list(ENTITY_KEYS),
    "additionalProperties": False,
}
EXTRACT_INSTRUCTION = (
    "List the people, organisations, places, dates and amounts that the article above names, as a JSON object "
    "with the keys " + ", ".join(f'"{key}"' for key in ENTITY_KEYS) + f". Each value is a list of at most {MAX_ITEMS} "
    "names or short phrases copied exactly from the article (an empty list when it names none)."
)  # after the article: qwen2.5-coder-0.5b copies an example record given before it, and lists sentences without one

_PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": MAX_CHARS, "description": "the person's name as the passage writes it"},
        "description": {
            "type": "string",
            "maxLength": MAX_DESCRIPTION,
            "description": "who the person is or what they do, in the passage's words",
        },
    },
    "required": ["name", "description"],
    "additionalProperties": False,
}
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "save_people",
            "description": "Save the people a news passage names, each with what the passage says about them.",
            "parameters": {
                "type": "object",
                "properties": {"people": {"type": "array", "items": _PERSON, "maxItems": MAX_ITEMS}},
                "required": ["people"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "save_places",
            "description": "Save the places a news passage names.",
            "parameters": {
                "type": "object",
                "properties": {"places": _STRINGS},
                "required": ["places"],
                "additionalProperties": False,
            },
        },
    },
]
TOOL_CHOICE: dict[str, Any] = {"type": "function", "function": {"name": "save_people"}}
TOOL_INSTRUCTION = (
    "Save the people the passage above names, each with what it says about them, with the save_people tool."
)


@dataclass(frozen=True)
class StructuredItem:
    """One document of one task: the chat ``messages`` to encode (with ``tools`` for the tool-call
    task), and what the answer must match: ``schema`` (extract: the record's schema) or ``tools`` and
    ``tool_choice`` (tool-call: the named tool's ``parameters`` are the arguments' schema).
    ``document`` is the real text the answer copies from."""

    id: str
    task: str
    document: str
    messages: tuple[dict, ...]
    schema: dict | None = None
    tools: tuple[dict, ...] = ()
    tool_choice: dict | None = None

    @property
    def answer_schema(self) -> dict:
        """The schema the answer's JSON (extract: the object; tool-call: the call's arguments) must satisfy."""
        if self.schema is not None:
            return self.schema
        name = (self.tool_choice or {})["function"]["name"]
        return next(tool["function"]["parameters"] for tool in self.tools if tool["function"]["name"] == name)


def _ordered(records: list[dict], key: str) -> list[dict]:
    short = [record for record in records if len(record["text"].split()) <= MAX_WORDS]
    random.Random(key).shuffle(short)  # str seeds are hashed deterministically
    return short


def _extract_items(seed: int) -> list[StructuredItem]:
    articles = [record for record in summarization_articles() if record["source"] == "xsum"]
    return [
        StructuredItem(
            record["id"], "extract", record["text"],
            ({"role": "user", "content": f"Article:\n{record['text']}\n\n{EXTRACT_INSTRUCTION}"},),
            schema=EXTRACTION_SCHEMA,
        )
        for record in _ordered(articles, f"structured/extract:{seed}")
    ]  # fmt: skip


def _tool_items(seed: int) -> list[StructuredItem]:
    passages = [record for record in rag_passages() if record["source"].startswith("nyt")]
    return [
        StructuredItem(
            record["id"], "tool-call", record["text"],
            ({"role": "user", "content": f"Passage:\n{record['text']}\n\n{TOOL_INSTRUCTION}"},),
            tools=tuple(TOOLS), tool_choice=TOOL_CHOICE,
        )
        for record in _ordered(passages, f"structured/tool-call:{seed}")
    ]  # fmt: skip


def structured_items(limit: int, seed: int = 0, tasks: tuple[str, ...] = TASKS) -> list[StructuredItem]:
    """The first ``limit`` documents of each task of ``tasks``, task by task (extract first)."""
    unknown = set(tasks) - set(TASKS)
    if unknown or not tasks:
        raise ValueError(f"tasks must be among {', '.join(TASKS)}, got {tasks}")
    builders = {"extract": _extract_items, "tool-call": _tool_items}
    items: list[StructuredItem] = []
    for task in tasks:
        found = builders[task](seed)
        if not 0 <= limit <= len(found):
            raise ValueError(f"limit must be between 0 and {len(found)} for the {task} task, got {limit}")
        items += found[:limit]
    return items

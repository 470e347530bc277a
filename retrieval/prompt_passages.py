"""Passages from a prompt: drafting from the documents a RAG chain put in its messages.

A chain that retrieved its own documents (LangChain's ``create_stuff_documents_chain``, LlamaIndex's
query engines, a hand-written one) sends them inside the prompt, most often joined by blank lines
("Context:\\n<doc1>\\n\\n<doc2>\\n\\nQuestion: ..."). On a completion, the ``reference`` drafter
(alias ``documents``; ``specdraft.retrieval.drafter_registry`` names it) finds those passages and
drafts from them with the reference drafter (``ReferenceDrafter``: answer-only matching, multi-branch
token trees), as ``RAGPipeline`` does from the passages it retrieved itself.

Rules (pinned in tests):

1. **Texts** (``prompt_texts``): a text prompt is one text; of chat messages, the content of every
   message except the assistant's (system, developer, user, tool, ...), in message order. The
   assistant's earlier answers are left out: they are the model's own text, not documents. A
   content given as a list of parts contributes its text parts (``{"type": "text", "text": ...}``),
   each a text of its own; other parts and non-string contents are skipped.
2. **Passages** (``split_passages``): each text is cut at blank lines (a line holding only
   whitespace); each block, stripped of surrounding whitespace, is a passage; empty blocks are
   dropped. Instruction lines, headings and the question are passages too: answers restate the
   question, and a block nothing matches costs nothing.
3. **Order and duplicates** (``prompt_passages``): passages keep the order of the prompt (the
   reference drafter breaks ties towards the earlier passage: retrieval rank, as chains list them);
   a passage identical to an earlier one is kept once, so repeating a document does not double its
   weight in the draft tree.
4. **Drafter** (``documents_drafter``): the reference drafter over the passages tokenized with the
   target's tokenizer, matching only the answer generated so far (never the prompt's own tail);
   None (plain decoding) when the prompt holds no passage.

Why blank lines: they are what chains put between documents (LangChain's default document
separator is ``"\\n\\n"``, LlamaIndex joins nodes the same way), and a passage boundary only stops
one draft at the end of a block (a match never spans two references); the suffix index makes
passages of any length equally cheap, so no chunking by size is needed.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Sequence

from specdraft import Drafter, Tokenizer

from .drafter_registry import REFERENCE, DraftInputs, parse_drafter
from .reference_drafter import ReferenceDraftConfig

ASSISTANT = "assistant"  # the role whose messages are not drafted from

_BLANK_LINE = re.compile(r"\n[ \t\r\f\v]*\n")


def split_passages(text: str) -> list[str]:
    """The blank-line separated blocks of ``text``, stripped, empty ones dropped (rule 2)."""
    return [block.strip() for block in _BLANK_LINE.split(text) if block.strip()]


def prompt_texts(prompt: str | None, messages: Iterable[Mapping[str, Any]] | None) -> list[str]:
    """The texts of a request a ``documents`` drafter draws from (rule 1): ``[prompt]`` for a text
    prompt, else the non-assistant messages' contents (``{"role", "content"}`` mappings)."""
    if messages is None:
        return [] if prompt is None else [prompt]
    texts: list[str] = []
    for message in messages:
        if message.get("role") == ASSISTANT:
            continue
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(
                part["text"]
                for part in content
                if isinstance(part, Mapping) and part.get("type") == "text" and isinstance(part.get("text"), str)
            )
    return texts


def prompt_passages(texts: Iterable[str]) -> list[str]:
    """The passages of ``texts`` in order, each distinct passage once (rules 2 and 3)."""
    passages: dict[str, None] = {}  # an ordered set
    for text in texts:
        for passage in split_passages(text):
            passages.setdefault(passage, None)
    return list(passages)


def documents_drafter(
    tokenizer: Tokenizer, texts: Sequence[str], config: ReferenceDraftConfig = ReferenceDraftConfig()
) -> Drafter | None:
    """A fresh reference drafter over the passages of ``texts`` for one request (rule 4); None when
    there are none. ``config.match_prompt_tail`` stays as given (False by default: answer-only)."""
    inputs = DraftInputs(tokenizer, passages=prompt_passages(texts), reference=config)
    return parse_drafter(REFERENCE).build(inputs)

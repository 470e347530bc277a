"""The prompt of iterative RAG and why it is laid out this way.

As in RaLMSpec (and In-Context RALM), the retrieved document goes **before** the question::

    [prefix]    BOS / the chat template's opening, the instruction, a blank line   (never changes)
    [documents] "Document: {text}\\n\\n" for each document in the prompt          (changes with retrieval)
    [question]  "Question: {question}" + "\\nAnswer:" (no chat template) or the
                template's end of the user turn and start of the assistant's       (never changes)
    [answer]    the tokens generated so far

The parts' ids are concatenated (each document tokenized on its own), so no part's tokens depend on
the documents beside it. The prefix's KV cache is computed once per answer and kept; when the documents
change at a stride boundary, the cache is cut back to the end of the prefix and documents +
question + answer so far are prefilled again in one pass (everything after the document depends on
it, so nothing later can be reused); when they do not change, generation just goes on.

With a chat template the user message is ``instruction + "\\n\\n" + documents + "Question: " +
question``, encoded by the model's own ``Model.encode_chat`` (every backend renders the template the
way transformers does, so the prompt is the same token for token on transformers and llama.cpp): the
message is encoded once with a marker where the documents go (``_MARK``), and the ids before and
after the marker's tokens are the prefix and the question parts, the same ids as the text before and
after the marker tokenized alone. A tokenizer that merges the marker with its neighbours (none of the
registry's models; a slow test checks them) gets the plain layout, as a model without a template.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from specdraft import Model

from ..retriever import Collection

__all__ = ["PromptLayout", "build_layout", "split_at", "DOCUMENT_FORMAT"]

DOCUMENT_FORMAT = "Document: {text}\n\n"
# Where the documents go. Its leading space keeps the blank line before it one pre-token, as it is at
# the end of a text, and its ">>" ends before "Question" as a text's start would: so the ids around the
# marker are the prefix and question parts tokenized alone (what transformers' prompt always was).
_MARK = " <<specdraft-documents>>"


@dataclass
class PromptLayout:
    """One question's prompt parts as token ids; ``document_ids`` tokenizes (and remembers) documents."""

    prefix_ids: list[int]
    question_ids: list[int]
    query_ids: list[int]  # the question alone: what queries start with
    collection: Collection
    model: Model
    _documents: dict[int, list[int]] = field(default_factory=dict)

    def document_ids(self, docs: Sequence[int]) -> list[int]:
        """The documents part for ``docs`` (rows of the collection, in prompt order)."""
        ids: list[int] = []
        for doc in docs:
            if doc not in self._documents:
                text = DOCUMENT_FORMAT.format(text=self.collection.texts[doc])
                self._documents[doc] = self.model.tokenizer.encode(text)
            ids += self._documents[doc]
        return ids

    def tail_ids(self, docs: Sequence[int], answer: Sequence[int]) -> list[int]:
        """What follows the prefix: documents, question, answer."""
        return self.document_ids(docs) + self.question_ids + list(answer)

    def prompt_ids(self, docs: Sequence[int], answer: Sequence[int] = ()) -> list[int]:
        """The whole context for ``docs`` and ``answer``."""
        return self.prefix_ids + self.tail_ids(docs, answer)


def build_layout(model: Model, collection: Collection, question: str, instruction: str) -> PromptLayout:
    """The prompt parts for ``question`` on ``model`` (see the module docstring)."""
    tokenizer = model.tokenizer
    if model.has_chat_template:
        ids = model.encode_chat([{"role": "user", "content": f"{instruction}\n\n{_MARK}Question: {question}"}])
        parts = split_at(ids, tokenizer.encode(_MARK))
        if parts is not None:
            return PromptLayout(parts[0], parts[1], tokenizer.encode(question), collection, model)
    prefix = model.encode(f"{instruction}\n\n")
    suffix = tokenizer.encode(f"Question: {question}\nAnswer:")
    return PromptLayout(prefix, suffix, tokenizer.encode(question), collection, model)


def split_at(ids: Sequence[int], mark: Sequence[int]) -> tuple[list[int], list[int]] | None:
    """``ids`` before and after the only occurrence of the run ``mark``; None when it does not occur
    exactly once."""
    n = len(mark)
    found = [i for i in range(len(ids) - n + 1) if list(ids[i : i + n]) == list(mark)] if n else []
    if len(found) != 1:
        return None
    return list(ids[: found[0]]), list(ids[found[0] + n :])

"""The prompt of iterative RAG and why it is laid out this way.

As in RaLMSpec (and In-Context RALM), the retrieved document goes **before** the question::

    [prefix]    BOS / the chat template's opening, the instruction, a blank line   (never changes)
    [documents] "Document: {text}\\n\\n" for each document in the prompt          (changes with retrieval)
    [question]  "Question: {question}" + "\\nAnswer:" (no chat template) or the
                template's end of the user turn and start of the assistant's       (never changes)
    [answer]    the tokens generated so far

Each part is tokenized on its own and the ids are concatenated, so a part's tokens never depend on
its neighbours. The prefix's KV cache is computed once per answer and kept; when the documents
change at a stride boundary, the cache is cut back to the end of the prefix and documents +
question + answer so far are prefilled again in one pass (everything after the document depends on
it, so nothing later can be reused); when they do not change, generation just goes on.

With a chat template the user message is ``instruction + "\\n\\n" + documents + "Question: " +
question``, rendered by the tokenizer's ``apply_chat_template`` (the HF tokenizer has one); a model
whose tokenizer cannot render its template gets the plain layout.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from specdraft import Model

from .retriever import Collection

__all__ = ["PromptLayout", "build_layout", "DOCUMENT_FORMAT"]

DOCUMENT_FORMAT = "Document: {text}\n\n"
_MARK = "<<specdraft-documents>>"


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
    render = getattr(tokenizer, "apply_chat_template", None)
    if model.has_chat_template and render is not None:
        text = render([{"role": "user", "content": f"{instruction}\n\n{_MARK}Question: {question}"}])
        head, found, tail = text.partition(_MARK)
        if found:
            prefix, suffix = tokenizer.encode(head), tokenizer.encode(tail)
            return PromptLayout(prefix, suffix, tokenizer.encode(question), collection, model)
    prefix = model.encode(f"{instruction}\n\n")
    suffix = tokenizer.encode(f"Question: {question}\nAnswer:")
    return PromptLayout(prefix, suffix, tokenizer.encode(question), collection, model)

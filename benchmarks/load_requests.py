"""The load test's requests: a fixed mix of chat, grammar and RAG requests, each in two modes.

Every request is greedy (``temperature`` 0 where the route takes one), so its answer is fixed: the
load test checks that each answer under load equals the answer the same request got alone.

- **Kinds**: ``chat`` (``POST /v1/chat/completions``: texts to rework, which prompt lookup drafts
  from), ``grammar`` (``POST /v1/grammar/correct``) and ``rag`` (``POST /v1/rag/query`` over
  ``DOCUMENTS``, added to a fresh index first).
- **Modes**: ``speculative`` sends what a client sends by default (the server's drafters:
  prompt lookup, the copy of the text, the reference drafter); ``plain`` asks each route for plain
  decoding (``drafter: "none"``, ``speculate: false``). Both give the same answer, token for token.
- **Answer** (``answer_of``): what must be identical: the text and, where the route returns them,
  the token ids and the finish reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

CHAT, GRAMMAR, RAG = "chat", "grammar", "rag"
KINDS = (CHAT, GRAMMAR, RAG)
SPECULATIVE, PLAIN = "speculative", "plain"
MODES = (SPECULATIVE, PLAIN)
PATHS = {CHAT: "/v1/chat/completions", GRAMMAR: "/v1/grammar/correct", RAG: "/v1/rag/query"}

CHAT_PROMPTS = (
    "Repeat this sentence word for word: The committee approved the new budget after a long debate about "
    "school funding and road repairs.",
    "Rewrite this list as one sentence: apples, oranges, bananas, pears, grapes, plums.",
    "Summarize in one sentence: The library will close at 6 pm on Friday for maintenance. It reopens on "
    "Monday at 9 am. Books due over the weekend can be returned on Monday without a fine.",
    "Add type hints to this function and return the whole function:\n\ndef add(a, b):\n    return a + b",
    "Translate to formal English: hey, the meeting got moved to thursday, can u make it?",
    "Copy this address exactly: 221B Baker Street, London NW1 6XE, United Kingdom.",
)
GRAMMAR_TEXTS = (
    "She go to school every days and she like it.",
    "The results was surprising, and nobody have expected them.",
    "I has two brother and one sister who lives in Paris.",
    "Yesterday we goes to the park and play football until it get dark.",
)
DOCUMENTS = (
    {
        "id": "eiffel",
        "text": "The Eiffel Tower in Paris is 330 metres tall. It was completed in 1889 for the World's Fair and was "
        "designed by the company of Gustave Eiffel.",
    },
    {
        "id": "refunds",
        "text": "Refunds are paid within 14 days of the return. Items must be unused and in their original packaging. "
        "Shipping costs are not refunded.",
    },
    {
        "id": "library",
        "text": "The city library is open from 9 am to 6 pm on weekdays and from 10 am to 4 pm on Saturdays. It is "
        "closed on Sundays and public holidays.",
    },
    {
        "id": "python",
        "text": "Python 3.12 was released in October 2023. It improved error messages and made f-strings more "
        "flexible, and it removed the distutils module.",
    },
)
RAG_QUESTIONS = (
    "How tall is the Eiffel Tower?",
    "How long do refunds take?",
    "When is the library open on Saturdays?",
    "When was Python 3.12 released?",
)


@dataclass(frozen=True)
class LoadRequest:
    """One distinct request: ``id`` names it (``chat-0``), ``bodies`` maps each mode to its JSON body."""

    id: str
    kind: str
    bodies: dict[str, dict[str, Any]] = field(hash=False)

    @property
    def path(self) -> str:
        return PATHS[self.kind]


def load_requests(max_tokens: int, index: str, top_k: int = 2) -> list[LoadRequest]:
    """The mix: every chat prompt, grammar text and RAG question once (RAG over ``index``)."""
    requests = []
    for number, prompt in enumerate(CHAT_PROMPTS):
        body = {"messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens, "temperature": 0}
        requests.append(LoadRequest(f"{CHAT}-{number}", CHAT, {SPECULATIVE: body, PLAIN: {**body, "drafter": "none"}}))
    for number, text in enumerate(GRAMMAR_TEXTS):
        body = {"text": text}
        requests.append(
            LoadRequest(f"{GRAMMAR}-{number}", GRAMMAR, {SPECULATIVE: body, PLAIN: {**body, "speculate": False}})
        )
    for number, question in enumerate(RAG_QUESTIONS):
        body = {"question": question, "index": index, "top_k": top_k, "max_tokens": max_tokens}
        requests.append(LoadRequest(f"{RAG}-{number}", RAG, {SPECULATIVE: body, PLAIN: {**body, "drafter": "none"}}))
    return requests


def answer_of(kind: str, response: dict[str, Any]) -> dict[str, Any]:
    """The part of a response that greedy decoding fixes (compared with ``==``)."""
    if kind == CHAT:
        choice = response["choices"][0]
        return {
            "text": choice["message"]["content"],
            "finish_reason": choice["finish_reason"],
            "tokens": response["usage"]["completion_tokens"],
        }
    if kind == GRAMMAR:
        return {"text": response["corrected"], "token_ids": response["token_ids"]}
    return {"text": response["answer"], "token_ids": response["token_ids"]}


def stats_of(kind: str, response: dict[str, Any]) -> dict[str, Any]:
    """The server's ``Stats`` of a response (chat: ``speculation``; grammar and RAG: ``stats``)."""
    return response["speculation"] if kind == CHAT else response["stats"]

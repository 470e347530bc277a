"""A LangChain RAG chain pointed at specdraft: the chain retrieves its own documents and puts them in
the prompt; the server drafts the answer from them (the ``documents`` drafter). No other change to
the chain: ``ChatOpenAI`` with ``base_url`` and one extra request field.

Run it against the server ``./start.sh`` starts (http://127.0.0.1:8000 by default):

    ./start.sh                                   # in one terminal
    .venv/bin/python demos/langchain_rag.py "How long do refunds take?"
    .venv/bin/python demos/langchain_rag.py --url http://127.0.0.1:8000 --key sk-...   # with keys

The chain is the one of LangChain's RAG tutorial (``create_stuff_documents_chain``'s prompt: the
retrieved documents joined by blank lines in the system message). It runs twice, drafting from the
documents and plainly (``drafter: "none"``), and prints both times: the answers are the same.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time

from langchain_core.documents import Document
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_openai import ChatOpenAI
from openai import OpenAI

DOCUMENTS = [
    Document(
        "Refunds are paid within 14 days of the return. Items must be unused and in their original packaging.",
        metadata={"id": "refunds"},
    ),
    Document(
        "Shipping is free for orders over 50 euros. Other orders pay a flat fee of 4.90 euros.",
        metadata={"id": "shipping"},
    ),
    Document(
        "The support team answers e-mails within one working day, from Monday to Friday.", metadata={"id": "support"}
    ),
    Document("Gift cards are valid for three years and cannot be exchanged for cash.", metadata={"id": "gift-cards"}),
]
SYSTEM = (  # LangChain's RAG tutorial prompt
    "You are an assistant for question-answering tasks. Use the following pieces of retrieved context to answer "
    "the question. If you don't know the answer, say that you don't know. Use three sentences maximum and keep the "
    "answer concise.\n\n{context}"
)


def retrieve(question: str, documents: list[Document], k: int = 2) -> list[Document]:
    """The ``k`` documents sharing the most words with the question (any retriever would do)."""
    words = set(re.findall(r"\w+", question.lower()))
    return sorted(documents, key=lambda d: -len(words & set(re.findall(r"\w+", d.page_content.lower()))))[:k]


def build_chain(url: str, key: str | None, drafter: str, max_tokens: int):
    """prompt | ChatOpenAI (pointed at specdraft, greedy) | text."""
    api_key = key or "not-needed"  # a server without keys ignores it
    model = OpenAI(base_url=url.rstrip("/") + "/v1", api_key=api_key).models.list().data[0].id  # the served model
    llm = ChatOpenAI(
        base_url=url.rstrip("/") + "/v1",
        api_key=api_key,
        model=model,
        temperature=0,
        max_tokens=max_tokens,
        extra_body={"drafter": drafter},  # specdraft's field: draft from the documents in the prompt
    )
    prompt = ChatPromptTemplate.from_messages([("system", SYSTEM), ("human", "{question}")])
    return prompt | llm | StrOutputParser()


def ask(chain, question: str) -> tuple[str, float]:
    docs = retrieve(question, DOCUMENTS)
    start = time.perf_counter()
    answer = chain.invoke({"context": "\n\n".join(d.page_content for d in docs), "question": question})
    return answer, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("question", nargs="?", default="How long do refunds take?")
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="the specdraft server (default: %(default)s)")
    parser.add_argument(
        "--key",
        default=os.environ.get("SPECDRAFT_API_KEY"),
        help="API key, when the server has keys (default: $SPECDRAFT_API_KEY)",
    )
    parser.add_argument("--max-tokens", type=int, default=96)
    args = parser.parse_args(argv)
    drafted, drafted_s = ask(build_chain(args.url, args.key, "documents", args.max_tokens), args.question)
    plain, plain_s = ask(build_chain(args.url, args.key, "none", args.max_tokens), args.question)
    print(f"question: {args.question}")
    print(f"answer: {drafted}")
    print(
        f"drafting from the documents: {drafted_s:.2f} s; plain decoding: {plain_s:.2f} s; identical: "
        f"{drafted == plain}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

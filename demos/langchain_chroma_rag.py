"""A LangChain RAG chain over a Chroma vector store, answered through specdraft: the chain's retriever
is LangChain's own ``Chroma`` (langchain-chroma) over a local Chroma folder, its model ``ChatOpenAI``
pointed at the specdraft server, which drafts the answer from the retrieved documents (the
``documents`` drafter). The same Chroma collection then feeds specdraft's own RAG through its two
adapters: ``LangChainRetriever`` (any LangChain retriever) and the Chroma store adapter
(``open_store``), which retrieve the same documents.

Run it against the server ``./start.sh`` starts (http://127.0.0.1:8000 by default):

    ./start.sh                                          # in one terminal
    .venv/bin/python demos/langchain_chroma_rag.py "How long do refunds take?"
    .venv/bin/python demos/langchain_chroma_rag.py --chroma ./chroma --url http://127.0.0.1:8000 --key sk-...

It needs ``pip install 'specdraft[chroma]' langchain-chroma langchain-openai``. The chain runs twice,
drafting from the documents and plainly (``drafter: "none"``), and prints both times: the answers are
the same. The documents are embedded with specdraft's packaged all-MiniLM-L6-v2 (no download).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough
from langchain_openai import ChatOpenAI
from openai import OpenAI

from specdraft.retrieval import Embedder, LangChainRetriever, StoreConfig, open_store

COLLECTION = "shop"
DOCUMENTS = [
    Document(
        "Refunds are paid within 14 days of the return. Items must be unused and in their original packaging.",
        id="refunds",
    ),
    Document("Shipping is free for orders over 50 euros. Other orders pay a flat fee of 4.90 euros.", id="shipping"),
    Document("The support team answers e-mails within one working day, from Monday to Friday.", id="support"),
    Document("Gift cards are valid for three years and cannot be exchanged for cash.", id="gift-cards"),
]
SYSTEM = (  # LangChain's RAG tutorial prompt
    "You are an assistant for question-answering tasks. Use the following pieces of retrieved context to answer "
    "the question. If you don't know the answer, say that you don't know. Use three sentences maximum and keep the "
    "answer concise.\n\n{context}"
)


class MiniLMEmbeddings(Embeddings):
    """specdraft's packaged all-MiniLM-L6-v2 as LangChain ``Embeddings`` (unit vectors)."""

    def __init__(self) -> None:
        self.embedder = Embedder()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embedder.encode(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embedder.encode([text])[0].tolist()


def chroma_store(folder: str, embeddings: Embeddings) -> Chroma:
    """The collection in ``folder`` (written with the documents the first time), inner-product space."""
    store = Chroma(
        collection_name=COLLECTION,
        embedding_function=embeddings,
        persist_directory=folder,
        collection_configuration={"hnsw": {"space": "ip"}},
    )
    if not store.get(limit=1)["ids"]:
        store.add_documents(DOCUMENTS)
    return store


def build_chain(retriever, url: str, key: str | None, drafter: str, max_tokens: int):
    """retriever -> prompt -> ChatOpenAI (pointed at specdraft, greedy) -> text."""
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
    context = retriever | (lambda docs: "\n\n".join(doc.page_content for doc in docs))
    return {"context": context, "question": RunnablePassthrough()} | prompt | llm | StrOutputParser()


def timed(chain, question: str) -> tuple[str, float]:
    start = time.perf_counter()
    answer = chain.invoke(question)
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
    parser.add_argument("--chroma", default=None, help="the Chroma folder (default: a temporary one)")
    parser.add_argument("--max-tokens", type=int, default=96)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.chroma or scratch
        embeddings = MiniLMEmbeddings()
        retriever = chroma_store(folder, embeddings).as_retriever(search_kwargs={"k": 2})
        drafted, drafted_s = timed(
            build_chain(retriever, args.url, args.key, "documents", args.max_tokens), args.question
        )
        plain, plain_s = timed(build_chain(retriever, args.url, args.key, "none", args.max_tokens), args.question)
        langchain_hits = LangChainRetriever(retriever).search([args.question], 2)[0]
        store = open_store(StoreConfig("chroma", path=folder, collection=COLLECTION), embeddings.embedder)
        store_hits = store.search([args.question], 2)[0]
        store.close()
    print(f"question: {args.question}")
    print(f"retrieved: {', '.join(hit.chunk.id for hit in langchain_hits)}")
    print(f"answer: {drafted}")
    print(
        f"drafting from the documents: {drafted_s:.2f} s; plain decoding: {plain_s:.2f} s; identical: "
        f"{drafted == plain}"
    )
    same = [hit.chunk.id for hit in store_hits] == [hit.chunk.id for hit in langchain_hits]
    print(f"specdraft's Chroma adapter retrieves the same documents: {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`specdraft ask`: answer one question from a document index (retrieve, prompt, draft, verify).

Text output: the answer as it is generated, then ``Sources:`` and a line per cited passage; a summary
of the speculation (tokens, drafted share, target passes, seconds) goes to standard error. With
``--json`` one object ``{"answer", "citations", "token_ids", "stats", "passages", "spans", "model",
"drafter"}`` (``RAGAnswer.to_dict()``; ``stats`` holds ``wall_s``). Bad input (an empty question, no
index at the folder, an index or datastore that cannot be used) is a ``ValueError``: the command
line prints it and exits with 2.

``--iterative`` answers with iterative RAG instead (``specdraft.retrieval.iterative``): a retrieval
every 4 generated tokens with the last 32 tokens of question + answer as the query, the top chunk in
the prompt, from ``--retriever`` (dense: exact FAISS flat over the index's vectors, hnsw, bm25);
``--speculative-retrieval`` answers those retrievals from a per-request cache and verifies them in
batches on a worker thread (RaLMSpec): the same answer and the same chunk at every stride, faster
when retrieval is slow. Text output: the answer, then one line per retrieval (stride, chunk id,
from the cache or the retriever, exact/confirmed/rolled back); with ``--json``
``IterativeAnswer.to_dict()`` plus ``model``, ``retriever``, ``speculative_retrieval`` (its ``stats``
in the core's names, ``wall_s`` like the other commands).

``--store STORE`` reads a collection of the user's vector store instead of an index
(``specdraft.retrieval.stores.open_store``; ``--index`` is then the store's folder or Milvus Lite file,
``--collection`` the collection, ``--embedding-model`` the model that embedded it): the same answer
and drafters, and with ``--iterative`` the store is the retriever (``--retriever`` does not apply).
The JSON answer then names ``store`` and ``collection``. A missing collection or extra is a
``ValueError`` (exit 2) naming it.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from .store_args import add_store_args, store_config

STDIN = "-"


def add_ask_parser(sub: Any) -> None:
    """Add `ask` to the `specdraft` subcommands."""
    from specdraft import DEFAULT_MODEL
    from specdraft.apps.service.config import ServiceConfig
    from specdraft.retrieval.drafter_registry import drafter_help
    from specdraft.retrieval.pipeline import RAG_OFFERS, RAGConfig

    from .model_args import add_model_args

    defaults = RAGConfig()
    ask = sub.add_parser(
        "ask",
        help="answer a question from a document index, drafting from the retrieved passages",
        description="Retrieve the passages closest to QUESTION from the index in DIR (built with `specdraft index "
        "build`), put them in the model's prompt and answer, drafting tokens from the passages (reference, LLMA), "
        "from a corpus datastore (datastore, REST; needs --datastore), both, or the prompt (prompt-lookup). The "
        "answer is exactly what plain decoding (--drafter none) gives, only faster. Cited passages follow the answer.",
    )
    ask.add_argument("question", metavar="QUESTION", help="the question, or - to read it from standard input")
    ask.add_argument(
        "--index", required=True, type=Path, metavar="DIR", help="the document index folder (--store: the store's)"
    )
    add_model_args(ask, DEFAULT_MODEL)
    ask.add_argument(
        "--top-k",
        type=int,
        default=defaults.top_k,
        metavar="K",
        help="passages put in the prompt (default: %(default)s)",
    )
    # The RAG API's default drafter (RAGConfig has none: RAGPipeline takes the drafter by name)
    ask.add_argument(
        "--drafter",
        default=ServiceConfig().rag_drafter,
        help=f"where drafts come from: {drafter_help(RAG_OFFERS)} (default: %(default)s)",
    )
    ask.add_argument(
        "--datastore",
        type=Path,
        default=None,
        metavar="DIR",
        help="a datastore built with `specdraft datastore build` for the same model (drafters datastore, "
        "reference+datastore)",
    )
    ask.add_argument(
        "--max-new-tokens",
        type=int,
        default=defaults.max_new_tokens,
        metavar="N",
        help="longest answer in tokens (default: %(default)s)",
    )
    ask.add_argument(
        "--json",
        action="store_true",
        help='print {"answer", "citations", "token_ids", "stats", ...} instead of the text',
    )
    ask.add_argument(
        "--iterative",
        action="store_true",
        help="iterative RAG: retrieve again every 4 generated tokens with the latest text as the query (--drafter "
        "does not apply)",
    )
    ask.add_argument(
        "--retriever",
        choices=("dense", "hnsw", "bm25"),
        default=None,
        help="--iterative: dense (exact FAISS flat, the default), hnsw or bm25",
    )
    ask.add_argument(
        "--speculative-retrieval",
        action="store_true",
        help="--iterative: answer retrievals from a per-request cache, verify them in batches on a worker thread "
        "(same answer)",
    )
    add_store_args(ask, "--index", embedding_model=True)


@dataclass(frozen=True)
class AskRequest:
    question: str
    index: Path
    model: str
    drafter: str
    top_k: int
    max_new_tokens: int
    datastore: Path | None = None
    iterative: bool = False
    retriever: str = "dense"
    speculative_retrieval: bool = False
    store: Any = None  # a StoreConfig: read this collection instead of the index folder
    embedding_model: str | None = None  # the store's embedding model (None: the packaged default)


def request_from_args(args: argparse.Namespace, stdin: TextIO) -> AskRequest:
    question = stdin.read() if args.question == STDIN else args.question
    if not question.strip():
        raise ValueError("the question is empty")
    if args.top_k < 1 or args.max_new_tokens < 1:
        raise ValueError("--top-k and --max-new-tokens must be >= 1")
    iterative = getattr(args, "iterative", False)
    retriever = getattr(args, "retriever", None)
    speculative = getattr(args, "speculative_retrieval", False)
    if not iterative and (retriever is not None or speculative):
        raise ValueError("--retriever and --speculative-retrieval need --iterative")
    store = store_config(args, args.index)
    if store is not None and retriever is not None:
        raise ValueError("--retriever does not apply with --store: the store is the retriever")
    return AskRequest(
        question.strip(),
        args.index,
        args.model,
        args.drafter,
        args.top_k,
        args.max_new_tokens,
        args.datastore,
        iterative,
        retriever or "dense",
        speculative,
        store,
        getattr(args, "embedding_model", None),
    )


def load_index(folder: Path):
    """The index in ``folder``; every reason it cannot be used as a ``ValueError``."""
    from specdraft.retrieval.index import DocumentIndex, IndexNotFoundError

    try:
        return DocumentIndex.load(folder)
    except IndexNotFoundError as error:
        raise ValueError(f"{error} (build one with `specdraft index build --docs FILE.jsonl --out {folder}`)") from None


def open_retriever(request: AskRequest) -> Any:
    """The store's collection (``--store``) or the index folder, as a retriever; ValueError when it
    cannot be used."""
    if request.store is None:
        return load_index(request.index)
    from specdraft.retrieval.embedder import Embedder, EmbedderConfig
    from specdraft.retrieval.stores import open_store

    embedder = Embedder(EmbedderConfig(model=request.embedding_model)) if request.embedding_model else None
    return open_store(request.store, embedder)


def _source(request: AskRequest) -> dict[str, str]:
    """What the JSON answer says the passages came from (``--store`` only)."""
    if request.store is None:
        return {}
    return {"store": request.store.store, "collection": request.store.collection}


def run_ask(
    request: AskRequest, pool: Any, as_json: bool, out: TextIO | None = None, err: TextIO | None = None
) -> dict:
    """Answer ``request`` with the model from ``pool``, print it to ``out``; returns the JSON object."""
    from specdraft.retrieval.datastore import Datastore
    from specdraft.retrieval.pipeline import RAGConfig, RAGPipeline

    out, err = out or sys.stdout, err or sys.stderr
    if request.iterative:
        return run_iterative(request, pool, as_json, out, err)
    index = open_retriever(request)
    datastore = Datastore.load(request.datastore) if request.datastore is not None else None
    target = pool.get(request.model)
    config = RAGConfig(top_k=request.top_k, max_new_tokens=request.max_new_tokens)
    stream = RAGPipeline(index, target, request.drafter, datastore, config).stream(request.question)
    for piece in stream:
        if not as_json:
            out.write(piece.text)
            out.flush()
    answer = stream.consume()
    payload = {**answer.to_dict(), "model": request.model, "drafter": request.drafter, **_source(request)}
    if as_json:
        out.write(json.dumps(payload, ensure_ascii=False) + "\n")
        return payload
    out.write("\n")
    by_id = {hit.chunk.id: hit for hit in answer.hits}
    if answer.citations:
        out.write("Sources:\n")
    for chunk_id in answer.citations:
        out.write(f"  [{chunk_id}] {_preview(by_id[chunk_id].chunk.text)}\n")
    stats = answer.stats
    print(
        f"{stats.generated_tokens} tokens, {stats.accepted_tokens} drafted ({request.drafter}), "
        f"{stats.target_forward_passes} target passes, {stats.wall_s:.2f} s",
        file=err,
    )
    return payload


def run_iterative(request: AskRequest, pool: Any, as_json: bool, out: TextIO, err: TextIO) -> dict:
    """``--iterative``: answer with iterative RAG over the index's chunks (module docstring)."""
    from specdraft.apps.iterative_rag import IterativeRetrievers, iterative_rag
    from specdraft.retrieval.iterative import RetrievalRecord

    if request.store is not None:
        retriever = open_retriever(request)
        collection = retriever.collection
    else:
        retriever, collection = IterativeRetrievers().get(load_index(request.index), request.retriever)
    rag = iterative_rag(
        pool.get(request.model), retriever, collection, request.max_new_tokens, request.speculative_retrieval
    )
    stream = rag.stream(request.question)
    for event in stream:
        if not as_json and not isinstance(event, RetrievalRecord):
            out.write(event.text)
            out.flush()
    answer = stream.answer
    payload = {
        **answer.to_dict(),
        "model": request.model,
        "retriever": request.store.store if request.store is not None else request.retriever,
        "speculative_retrieval": request.speculative_retrieval,
        **_source(request),
    }
    if as_json:
        out.write(json.dumps(payload, ensure_ascii=False) + "\n")
        return payload
    out.write("\nRetrievals:\n")
    for record in answer.retrievals:
        out.write(
            f"  stride {record.stride}: [{collection.ids[record.doc]}] {record.source}, {record.status} "
            f"{_preview(collection.texts[record.doc], 60)}\n"
        )
    stats = answer.stats
    spec = (
        f", {stats.get('cache_hits', 0)} cache hits, {stats.get('rollbacks', 0)} rollbacks"
        if request.speculative_retrieval
        else ""
    )
    print(
        f"{len(answer.token_ids)} tokens, {len(answer.retrievals)} retrievals ({payload['retriever']}{spec}), "
        f"retrieval {stats['retrieval_s']:.2f} s, generation {stats['generation_s']:.2f} s, {stats['wall_s']:.2f} s",
        file=err,
    )
    return payload


def _preview(text: str, chars: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= chars else flat[: chars - 1] + "…"

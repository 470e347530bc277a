"""Validating RAG requests: pure functions from a request body to a ``DocumentsRequest`` or ``QueryRequest``.

Nothing here needs a model or an index. Bad input raises ``RequestError(message, param)`` (a 400).
The conventions are ``validation``'s: ``null`` counts as absent, unknown fields are ignored, only
``true``/``false`` are booleans. Each document's own fields (id, text, metadata) are checked by
``DocumentIndex.add`` before anything is embedded or written; the service reports them as
``documents[i]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from specdraft.retrieval.pipeline import DRAFTERS

from .config import ServiceConfig
from .rag_indexes import IndexStore
from .validation import _ABSENT, RequestError, _boolean, _describe, _integer, required_string

DEFAULT_INDEX = "default"
ITERATIVE_RETRIEVERS = ("dense", "hnsw", "bm25")
MAX_QUESTION_CHARS = 4000


@dataclass(frozen=True)
class DocumentsRequest:
    index: str
    documents: list[Any]  # each checked by DocumentIndex.add


@dataclass(frozen=True)
class QueryRequest:
    index: str
    question: str
    top_k: int
    drafter: str
    max_tokens: int
    stream: bool = False
    iterative: bool = False  # iterative RAG (specdraft.apps.iterative_rag); drafter and top_k do not apply
    retriever: str = "dense"
    speculative_retrieval: bool = False


def parse_documents_request(body: Mapping[str, Any], config: ServiceConfig) -> DocumentsRequest:
    """Validate ``{"index"?, "documents": [{"id", "text", "metadata"?}, ...]}``."""
    documents = body.get("documents")
    if documents is None:
        raise RequestError('documents is required: a list of {"id", "text", "metadata"?} objects', "documents")
    if not isinstance(documents, list):
        raise RequestError(f"documents must be a list of objects, got {_describe(documents)}", "documents")
    if not documents:
        raise RequestError("documents must not be empty", "documents")
    if len(documents) > config.max_rag_documents:
        raise RequestError(
            f"documents holds {len(documents)} documents; send at most {config.max_rag_documents} per request", "documents"
        )
    return DocumentsRequest(_index(body), documents)


def parse_query_request(body: Mapping[str, Any], config: ServiceConfig) -> QueryRequest:
    """Validate ``{"index"?, "question", "top_k"?, "drafter"?, "max_tokens"?, "stream"?, "iterative"?,
    "retriever"?, "speculative_retrieval"?}``. ``retriever`` and ``speculative_retrieval`` need
    ``"iterative": true``, which takes neither ``drafter`` nor ``top_k`` (one chunk per stride)."""
    top_k = _integer(body, "top_k", 1, config.max_rag_top_k)
    max_tokens = _integer(body, "max_tokens", 1, config.max_tokens_limit)
    stream = _boolean(body, "stream")
    iterative = _boolean(body, "iterative")
    if iterative is True:
        return _iterative_request(body, config, max_tokens, stream)
    for name in ("retriever", "speculative_retrieval"):
        if body.get(name) is not None:
            raise RequestError(f"{name} applies to iterative answers only: add \"iterative\": true", name)
    return QueryRequest(
        index=_index(body),
        question=_question(body),
        top_k=config.rag_top_k if top_k is _ABSENT else top_k,
        drafter=_drafter(body, config),
        max_tokens=config.default_max_tokens if max_tokens is _ABSENT else max_tokens,
        stream=False if stream is _ABSENT else stream,
    )


def _iterative_request(body: Mapping[str, Any], config: ServiceConfig, max_tokens: Any, stream: Any) -> QueryRequest:
    for name, why in (("drafter", "iterative answers draft nothing"), ("top_k", "iterative answers put one chunk per stride in the prompt")):
        if body.get(name) is not None:
            raise RequestError(f"{name} does not apply with \"iterative\": true ({why})", name)
    retriever = body.get("retriever")
    if retriever is not None and retriever not in ITERATIVE_RETRIEVERS:
        raise RequestError(f"retriever must be one of {', '.join(ITERATIVE_RETRIEVERS)}; got {_describe(retriever)}", "retriever")
    speculative = _boolean(body, "speculative_retrieval")
    return QueryRequest(
        index=_index(body),
        question=_question(body),
        top_k=1,
        drafter="none",
        max_tokens=config.default_max_tokens if max_tokens is _ABSENT else max_tokens,
        stream=False if stream is _ABSENT else stream,
        iterative=True,
        retriever=retriever or ITERATIVE_RETRIEVERS[0],
        speculative_retrieval=speculative is True,
    )


def _index(body: Mapping[str, Any]) -> str:
    name = body.get("index")
    if name is None:
        return DEFAULT_INDEX
    if not isinstance(name, str) or not IndexStore.valid_name(name):
        raise RequestError(
            f"index must be a name of 1-64 letters, digits, '_', '-' or '.' (not starting with '.'), got {_describe(name)}",
            "index",
        )
    return name


def _question(body: Mapping[str, Any]) -> str:
    question = required_string(body, "question")
    if len(question) > MAX_QUESTION_CHARS:
        raise RequestError(f"question has {len(question)} characters; at most {MAX_QUESTION_CHARS} are accepted", "question")
    return question.strip()


def _drafter(body: Mapping[str, Any], config: ServiceConfig) -> str:
    name = body.get("drafter")
    if name is None:
        return config.rag_drafter
    if not isinstance(name, str) or name not in DRAFTERS:
        raise RequestError(f"drafter must be one of {', '.join(DRAFTERS)}; got {_describe(name)}", "drafter")
    if "datastore" in name and config.datastore is None:
        raise RequestError(f"drafter {name!r} needs a datastore, and this server has none (start it with --datastore DIR)", "drafter")
    return name


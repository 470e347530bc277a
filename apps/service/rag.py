"""Retrieval-augmented answers over named document indexes or configured vector stores: ``POST
/v1/rag/documents``, ``POST /v1/rag/query`` (plain, or ``"iterative": true``), ``GET /v1/rag/indexes``
(docs/rag.md, docs/iterative-rag.md, docs/vector-stores.md).

Errors: an unknown index is a 404; an index built with another embedding model, damaged files or a
store that cannot be opened a 409; a retriever failing mid-answer a 502 naming it (never a different
answer); everything else a 400. None of them changes an index, a store or another request.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

from flask import Blueprint, Response, current_app, jsonify, request

from specdraft.retrieval.index import (
    CorruptIndexError,
    DocumentIndex,
    EmbedderMismatchError,
    IndexNotFoundError,
    InvalidDocumentError,
)
from specdraft.retrieval.pipeline import RAGConfig, RAGPipeline, RAGStream, passage_dict
from specdraft.retrieval.retriever import Retriever, RetrieverError
from specdraft.retrieval.stores import StoreError, StoreRetriever

from . import metrics, sse
from .errors import error_response
from .limits import RequestGuard, current_guard, drain, generating, until_stopped
from .protocol import responses
from .protocol.errors import RequestError, as_request_error, parse_json_body
from .protocol.rag import QueryRequest, parse_documents_request, parse_query_request
from .protocol.responses import answer
from .state import ServiceState, current_state

bp = Blueprint("rag", __name__, url_prefix="/v1/rag")


@bp.post("/documents")
def add_documents() -> Response:
    state = current_state()
    req = parse_documents_request(parse_json_body(request.get_data()), state.config)
    try:
        added = state.indexes().add(req.index, req.documents)
    except InvalidDocumentError as error:
        where = f"documents[{error.position}]" + (f" (id {error.doc_id!r})" if error.doc_id is not None else "")
        raise RequestError(f"{where}: {error.problem}", f"documents[{error.position}]") from None
    except (EmbedderMismatchError, CorruptIndexError) as error:
        raise RequestError(_unusable(req.index, error), "index", 409) from None
    return jsonify(added)


@bp.post("/query")
@generating
def query() -> Response:
    state = current_state()
    req = parse_query_request(parse_json_body(request.get_data()), state.config)
    if req.iterative:
        return _iterative(state, req)
    stream = metrics.observe(_start(state, req, _retriever(state, req)), req.drafter)
    about = {**_source(req), "model": state.config.model_name, "drafter": req.drafter}
    passages = answer(responses.Passages, passages=[passage_dict(hit) for hit in stream.hits])
    piece = lambda piece: answer(responses.Piece, text=piece.text, source=piece.source)  # noqa: E731
    return _answer(req, stream, responses.RAGAnswer, about, passages, piece)


def _iterative(state: ServiceState, req: QueryRequest) -> Response:
    """An iterative answer (module docstring): retrievers cached per app and index version."""
    from specdraft.apps.iterative_rag import IterativeRetrievers, event_dict, iterative_rag
    from specdraft.retrieval.iterative import NeedsLocalModel

    retrievers = current_app.extensions.setdefault("specdraft_iterative_retrievers", IterativeRetrievers())
    source = _retriever(state, req)  # a 404/409 before anything else
    try:
        if isinstance(source, StoreRetriever):
            retriever, collection, retriever_name = source, source.collection, source.name
        else:
            retriever, collection = retrievers.get(source, req.retriever)
            retriever_name = req.retriever
        stream = iterative_rag(
            state.target(), retriever, collection, req.max_tokens, req.speculative_retrieval, retrievers.schedulers
        ).stream(req.question)
    except NeedsLocalModel as error:  # this server verifies on a serving engine
        raise RequestError(str(error), "iterative") from None
    except ValueError as error:  # an empty index, a question that does not fit the context
        raise RequestError(str(error), "question") from None
    about = {
        **_source(req),
        "model": state.config.model_name,
        "retriever": retriever_name,
        "speculative_retrieval": req.speculative_retrieval,
    }
    return _answer(
        req, stream, responses.IterativeAnswer, about, None, lambda item: _event(event_dict(item, collection))
    )


def _event(payload: dict[str, Any]) -> dict[str, Any]:
    """An iterative answer's streamed event (``event_dict``) as its model."""
    return answer(responses.RetrievalEvent if "retrieval" in payload else responses.Text, **payload)


def _answer(
    req: QueryRequest,
    stream: Any,
    model: type[responses.Reply],
    about: dict[str, Any],
    opening: dict[str, Any] | None,
    payload: Callable,
) -> Response:
    """The answer of ``stream`` (a ``RAGStream`` or an iterative one) as ``model``: its ``to_dict()``
    and ``about``; streamed: ``opening`` (if any), ``payload(piece)`` per piece, then ``{"answer": ...}``."""
    guard = current_guard()
    if not req.stream:
        return jsonify(answer(model, **drain(stream, guard).to_dict(), **about, **_limit_reached(guard)))

    def payloads() -> Iterator[dict[str, Any]]:
        if opening is not None:
            yield opening
        for piece in until_stopped(stream, guard):
            yield payload(piece)
        result = stream.stop()
        if not guard.client_gone:
            yield {"answer": answer(model, **result.to_dict(), **about, **_limit_reached(guard))}

    return sse.response(payloads(), guard)


@bp.errorhandler(RetrieverError)
def _retriever_failed(error: RetrieverError) -> Response:
    """A retriever that fails mid-answer: a 502 naming it, never a different answer."""
    return error_response(RequestError(str(error), "retriever", 502))


@bp.get("/indexes")
def indexes() -> Response:
    state = current_state()
    indexes, config = state.indexes().names(), state.config
    stores = [name for name, _ in config.stores]
    return jsonify(
        answer(
            responses.Indexes,
            indexes=indexes,
            stores=stores,
            embedding_model=config.embedding_model,
            datastore=config.datastore,
        )
    )


def _source(req: QueryRequest) -> dict[str, str]:
    """What an answer says it searched: ``{"store": name}`` or ``{"index": name}``."""
    return {"store": req.store} if req.store is not None else {"index": req.index}


def _retriever(state: ServiceState, req: QueryRequest) -> Retriever:
    """The store (``req.store``) or the index a query searches."""
    if req.store is None:
        return _index(state, req.index)
    prefix = f"store {req.store!r} cannot be used by this server: "  # configured, but cannot be opened: a 409
    with as_request_error("store", StoreError, prefix=prefix, status=409):
        return state.store(req.store)


def _index(state: ServiceState, name: str) -> DocumentIndex:
    store = state.indexes()
    try:
        return store.get(name)
    except IndexNotFoundError:
        known = ", ".join(store.names()) or "none yet"
        raise RequestError(
            f"no index named {name!r} (indexes: {known}); add documents with POST /v1/rag/documents", "index", 404
        ) from None
    except (EmbedderMismatchError, CorruptIndexError) as error:
        raise RequestError(_unusable(name, error), "index", 409) from None


def _unusable(name: str, error: Exception) -> str:
    """An index that exists but cannot be used (another embedding model, damaged files): a 409's message."""
    return f"index {name!r} cannot be used by this server: {error}"


def _start(state: ServiceState, req: QueryRequest, index: Retriever) -> RAGStream:
    """Retrieve and build the prompt now, so that every input error is a 4xx before any streaming."""
    config = RAGConfig(top_k=req.top_k, max_new_tokens=req.max_tokens, speculation=state.config.rag_speculation)
    with as_request_error("drafter", ValueError):  # a datastore built for another tokenizer
        pipeline = RAGPipeline(index, state.target(), req.drafter, state.datastore(), config)
    with as_request_error("top_k", ValueError):  # the passages do not fit the model's context
        return pipeline.stream(req.question)


def _limit_reached(guard: RequestGuard) -> dict[str, Any]:
    return {"time_limit_reached": True} if guard.timed_out else {}

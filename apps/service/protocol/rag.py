"""The bodies of ``POST /v1/rag/documents`` (``DocumentsBody``) and ``POST /v1/rag/query``
(``QueryBody``), and the requests they become (docs/rag.md). A document follows
``specdraft.retrieval.chunker``'s rules; ids unique and new to the index are checked by
``DocumentIndex.add``. ``retriever`` and ``speculative_retrieval`` need ``"iterative": true``, which
takes neither ``drafter`` nor ``top_k``; ``store`` replaces ``index`` (and, iteratively, ``retriever``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal, Mapping

from annotated_types import MaxLen, MinLen
from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    model_validator,
)

from specdraft.retrieval.chunker import InvalidDocumentError, validate_documents
from specdraft.retrieval.drafter_registry import DATASTORE, drafter_names, parse_drafter
from specdraft.retrieval.iterative import RETRIEVER_KINDS
from specdraft.retrieval.pipeline import DRAFTERS, RAG_OFFERS

from ..config import ServiceConfig
from ..rag_indexes import NAME as INDEX_NAME
from .errors import describe, refuse
from .openai_fields import TOKEN_LIMIT
from .types import ConfigRule, Keywords, NotBlank, RequestBody, within

DEFAULT_INDEX = "default"
ITERATIVE_ONLY = ("retriever", "speculative_retrieval")
NOT_ITERATIVE = {
    "drafter": "iterative answers draft nothing",
    "top_k": "iterative answers put one chunk per stride in the prompt",
}
MAX_QUESTION_CHARS = 4000


@dataclass(frozen=True)
class DocumentsRequest:
    index: str
    documents: list[Any]  # each as DocumentIndex.add takes it


@dataclass(frozen=True)
class QueryRequest:
    index: str
    question: str
    top_k: int
    drafter: str
    max_tokens: int
    stream: bool = False
    iterative: bool = False  # iterative RAG (specdraft.apps.iterative_rag); drafter and top_k do not apply
    retriever: str = RETRIEVER_KINDS[0]  # with iterative: the retriever (default: exact dense)
    speculative_retrieval: bool = False
    store: str | None = None  # a name of ServiceConfig.stores: search it instead of ``index``


def _index(name: Any) -> Any:
    if not isinstance(name, str) or INDEX_NAME.fullmatch(name) is None:
        raise refuse(
            "{path} must be a name of 1-64 letters, digits, '_', '-' or '.' (not starting with '.'), got "
            f"{describe(name)}"
        )
    return name


IndexName = Annotated[
    StrictStr,
    BeforeValidator(_index),
    Keywords(
        {
            "pattern": f"^{INDEX_NAME.pattern}$",
            "description": "an index name: 1-64 letters, digits, '_', '-' or '.', not starting with '.' (default "
            f"{DEFAULT_INDEX!r})",
        }
    ),
]


class Document(RequestBody):
    """A document: ``id`` unique in the index; ``text`` chunked and embedded; ``metadata`` kept with its chunks."""

    id: Annotated[StrictStr, NotBlank()] = Field(description="unique in the index")
    text: Annotated[StrictStr, NotBlank()] = Field(description="the document's text (chunked and embedded)")
    metadata: dict[str, Any] | None = Field(None, description="any JSON object, kept with the document's chunks")

    @model_validator(mode="before")
    @classmethod
    def _as_the_index_reads_it(cls, document: Any) -> Any:
        try:
            validate_documents([document], ())
        except InvalidDocumentError as error:
            where = "{path}" + (f" (id {error.doc_id!r})" if error.doc_id is not None else "")
            raise refuse(f"{where}: {error.problem}") from None
        return document


def _few_enough(documents: list[Document], config: ServiceConfig) -> list[Document]:
    if len(documents) > config.max_rag_documents:
        raise refuse(f"{{path}} holds {len(documents)} documents; send at most {config.max_rag_documents} per request")
    return documents


DOCUMENT_COUNT = ConfigRule("rag_documents", _few_enough, lambda config: {"maxItems": config.max_rag_documents})


class DocumentsBody(RequestBody):
    """Add documents to an index: document ids unique in the request and new to the index."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "index": DEFAULT_INDEX,
                    "documents": [
                        {
                            "id": "eiffel",
                            "text": "The Eiffel Tower is 330 metres tall.",
                            "metadata": {"source": "notes"},
                        }
                    ],
                }
            ]
        }
    )

    index: IndexName | None = None
    documents: Annotated[list[Document], MinLen(1), DOCUMENT_COUNT]


def _rag_drafter(name: str, config: ServiceConfig) -> str:
    if name not in drafter_names(RAG_OFFERS, aliases=True):
        raise refuse(f"{{path}} must be one of {', '.join(DRAFTERS)}; got {describe(name)}")
    if DATASTORE in parse_drafter(name).needs and config.datastore is None:
        raise refuse(f"{{path}} {name!r} needs a datastore, and this server has none (start it with --datastore DIR)")
    return name


def rag_drafters(config: ServiceConfig) -> list[str]:
    """The ``drafter`` values a RAG query may give on this server (aliases too)."""
    return list(drafter_names(config.rag_offers, aliases=True))


def _rag_store(name: str, config: ServiceConfig) -> str:
    if config.store(name) is None:
        known = ", ".join(store for store, _ in config.stores)
        where = f"one of {known}" if known else "a configured store, and this server has none (serve with --store)"
        raise refuse(f"{{path}} must be {where}; got {describe(name)}")
    return name


RAG_STORE = ConfigRule(
    "rag_store",
    _rag_store,
    lambda config: {
        "enum": [name for name, _ in config.stores],
        "description": "a vector store of this server to search instead of an index",
    },
)
RAG_TOP_K = ConfigRule(
    "rag_top_k",
    lambda value, config: within(value, 1, config.max_rag_top_k),
    lambda config: {
        "minimum": 1,
        "maximum": config.max_rag_top_k,
        "description": f"passages to retrieve (default {config.rag_top_k})",
    },
)
RAG_DRAFTER = ConfigRule(
    "rag_drafter",
    _rag_drafter,
    lambda config: {"enum": rag_drafters(config), "description": f"default {config.rag_drafter!r}"},
)


class QueryBody(RequestBody):
    """Answer a question from an index's passages."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"index": DEFAULT_INDEX, "question": "How tall is the Eiffel Tower?"}]}
    )

    index: IndexName | None = None
    question: Annotated[StrictStr, MaxLen(MAX_QUESTION_CHARS), NotBlank()]
    top_k: Annotated[StrictInt, RAG_TOP_K] | None = None
    drafter: Annotated[StrictStr, RAG_DRAFTER] | None = None
    max_tokens: Annotated[StrictInt, TOKEN_LIMIT] | None = None
    stream: StrictBool | None = Field(None, description="answer with server-sent events")
    iterative: StrictBool | None = Field(
        None, description="iterative RAG: retrieve again every few tokens (RaLMSpec); takes neither drafter nor top_k"
    )
    retriever: Literal[RETRIEVER_KINDS] | None = Field(  # type: ignore[valid-type]
        None, description="with iterative: exact dense, HNSW or BM25 (default 'dense')"
    )
    speculative_retrieval: StrictBool | None = Field(
        None,
        description="with iterative: answer retrievals from a per-request cache, verified in batches (same answer)",
    )
    store: Annotated[StrictStr, RAG_STORE] | None = None

    @model_validator(mode="after")
    def _fields_of_the_kind_of_answer(self) -> QueryBody:
        for name, why in NOT_ITERATIVE.items():
            if self.iterative is True and getattr(self, name) is not None:
                raise refuse(f'{name} does not apply with "iterative": true ({why})', name)
        for name in ITERATIVE_ONLY:
            if self.iterative is not True and getattr(self, name) is not None:
                raise refuse(f'{name} applies to iterative answers only: add "iterative": true', name)
        if self.store is not None and self.index is not None:
            raise refuse("store and index name two sources: give one", "store")
        if self.store is not None and self.retriever is not None:
            raise refuse("retriever does not apply with store: the store is the retriever", "retriever")
        return self


def parse_documents_request(body: Mapping[str, Any], config: ServiceConfig) -> DocumentsRequest:
    """Validate ``{"index"?, "documents": [{"id", "text", "metadata"?}, ...]}``."""
    req = DocumentsBody.parse(body, config)
    return DocumentsRequest(req.index or DEFAULT_INDEX, [document.model_dump() for document in req.documents])


def parse_query_request(body: Mapping[str, Any], config: ServiceConfig) -> QueryRequest:
    """Validate a query (module docstring) and fill in ``config``'s defaults."""
    req = QueryBody.parse(body, config)
    iterative = req.iterative is True  # then top_k and drafter are absent; otherwise the iterative fields are
    return QueryRequest(
        index=req.index or DEFAULT_INDEX,
        store=req.store,
        question=req.question.strip(),
        max_tokens=config.default_max_tokens if req.max_tokens is None else req.max_tokens,
        stream=req.stream is True,
        top_k=1 if iterative else config.rag_top_k if req.top_k is None else req.top_k,
        drafter="none" if iterative else config.rag_drafter if req.drafter is None else req.drafter,
        iterative=iterative,
        retriever=req.retriever or RETRIEVER_KINDS[0],
        speculative_retrieval=req.speculative_retrieval is True,
    )

"""Slow: qwen2.5-coder-0.5b (GGUF on llama.cpp) answers RAG queries over a Chroma collection through
real HTTP (waitress on loopback): the collection is written with the packaged all-MiniLM-L6-v2, the
server names it as a store, and the answer drafted from the passages (reference drafter) is token for
token the plain one; iterative RAG with speculative retrieval over the store is plain iterative RAG's."""

from __future__ import annotations

import json
import urllib.request

import pytest
from live_server import LiveServer

from specdraft import ModelConfig
from specdraft.apps.model_pool import ModelPool
from specdraft.apps.service import create_app
from specdraft.apps.service.config import ServiceConfig
from specdraft.retrieval.stores import StoreConfig, build_store

pytestmark = pytest.mark.slow

MODEL = "qwen2.5-coder-0.5b"
DOCS = [
    {"id": "eiffel", "text": "The Eiffel Tower in Paris is 330 metres tall. It was completed in 1889."},
    {"id": "python", "text": "Python 3.12 was released in October 2023. It improved error messages."},
    {"id": "library", "text": "The city library is open from 9 am to 6 pm on weekdays."},
]
QUESTION = "How tall is the Eiffel Tower?"


@pytest.fixture(scope="module")
def server(real_model, tmp_path_factory):
    config = StoreConfig("chroma", path=str(tmp_path_factory.mktemp("chroma")), collection="facts")
    build_store(config, DOCS).close()
    pool = ModelPool(ModelConfig(MODEL, backend="llama-cpp"))
    pool.add(MODEL, real_model(MODEL, "llama-cpp"))
    app = create_app(ServiceConfig(model=ModelConfig(MODEL, backend="llama-cpp"), stores=(("facts", config),)), pool)
    with LiveServer(app) as live:
        yield live
    app.extensions["specdraft"].store("facts").close()


def query(server, **body) -> dict:
    request = urllib.request.Request(
        server.url + "/v1/rag/query",
        json.dumps({"question": QUESTION, "store": "facts", "max_tokens": 24, **body}).encode(),
        {"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=300) as response:
        return json.load(response)


def test_a_chroma_store_answers_over_http_as_plain_decoding(server):
    plain = query(server, drafter="none")
    drafted = query(server, drafter="reference")
    assert plain["store"] == "facts" and plain["passages"][0]["document"] == "eiffel"
    assert drafted["token_ids"] == plain["token_ids"] and "330" in plain["answer"]


def test_speculative_retrieval_over_chroma_is_plain_iterative_rag(server):
    plain = query(server, iterative=True)
    speculative = query(server, iterative=True, speculative_retrieval=True)
    assert speculative["token_ids"] == plain["token_ids"] and speculative["retriever"] == "chroma"
    assert [r["doc_ids"] for r in speculative["retrievals"]] == [r["doc_ids"] for r in plain["retrievals"]]

"""Bad input to the store adapters is a clear error and corrupts nothing: an unknown store, a
missing collection or field, a missing extra, a bad document, an existing collection, a write that
fails half-way (the half-built collection is removed), a store opened with another embedder."""

from __future__ import annotations

import sys

import pytest
from hash_embedder import HashEmbedder
from store_fixtures import STORES, documents, failing_half_way, store_config

from specdraft.retrieval.chunker import InvalidDocumentError
from specdraft.retrieval.stores import (
    CollectionExistsError,
    CollectionNotFoundError,
    LangChainRetriever,
    StoreConfig,
    StoreError,
    StoreNotInstalledError,
    build_store,
    open_store,
)
from specdraft.retrieval.stores.registry import store_module

EMBEDDER = HashEmbedder(dim=64)
CLIENTS = {"chroma": "chromadb", "lancedb": "lancedb", "qdrant": "qdrant_client", "milvus": "pymilvus"}


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"store": "pinecone"}, "store must be one of chroma, lancedb, qdrant, milvus, got 'pinecone'"),
        ({"store": "chroma", "path": ""}, "path must be a non-empty string"),
        ({"store": "qdrant", "collection": " "}, "collection must be a non-empty string"),
        ({"store": "lancedb", "text_field": ""}, "text_field must be None or a non-empty string"),
        ({"store": "milvus"}, "path: Milvus Lite keeps its database in a file"),
    ],
)
def test_a_bad_config_names_its_field(fields, message):
    with pytest.raises(ValueError, match=message):
        StoreConfig(**fields)


def test_an_unknown_store_module_is_refused():
    with pytest.raises(ValueError, match="unknown store 'pgvector': choose one of chroma, lancedb, qdrant, milvus"):
        store_module("pgvector")


@pytest.mark.parametrize("store", STORES)
def test_a_missing_collection_is_named_and_not_created(store, tmp_path):
    config = store_config(store, tmp_path, collection="absent")
    with pytest.raises(CollectionNotFoundError, match="absent"):
        open_store(config, EMBEDDER)
    built = build_store(store_config(store, tmp_path, collection="present"), documents(5), EMBEDDER)
    built.close()
    with pytest.raises(CollectionNotFoundError, match="'absent'.*present"):  # names what is there
        open_store(config, EMBEDDER)


@pytest.mark.parametrize("store", STORES)
def test_a_missing_extra_names_it(store, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, CLIENTS[store], None)  # import fails as if not installed
    with pytest.raises(StoreNotInstalledError, match=rf"pip install 'specdraft\[{store}\]'"):
        open_store(store_config(store, tmp_path), EMBEDDER)


def test_a_missing_langchain_names_its_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "langchain_core.retrievers", None)
    with pytest.raises(StoreNotInstalledError, match=r"specdraft\[langchain\]"):
        LangChainRetriever(object())
    monkeypatch.undo()
    with pytest.raises(TypeError, match="expected a LangChain BaseRetriever, got object"):
        LangChainRetriever(object())


@pytest.mark.parametrize("store", STORES)
def test_bad_input_leaves_an_existing_collection_as_it_was(store, tmp_path, monkeypatch):
    config = store_config(store, tmp_path)
    build_store(config, documents(6), EMBEDDER).close()
    bad = documents(3) + [{"id": "d0", "text": "a repeated id"}]
    with pytest.raises(InvalidDocumentError, match="duplicate id"):
        build_store(config, bad, EMBEDDER, overwrite=True)  # checked before the store is touched
    with pytest.raises(CollectionExistsError, match="already exists"):
        build_store(config, documents(2), EMBEDDER)
    reopened = open_store(config, EMBEDDER)
    assert len({reopened.collection.chunk(i).doc_id for i in range(len(reopened))}) == 6
    reopened.close()
    with pytest.raises(StoreError, match="64-dimensional vectors; the embedder 'hash-bow-32' gives 32"):
        open_store(config, HashEmbedder(dim=32))


@pytest.mark.parametrize("store", STORES)
def test_a_write_that_fails_half_way_removes_what_it_wrote(store, tmp_path, monkeypatch):
    module = store_module(store)
    monkeypatch.setattr(module, "create_backend", failing_half_way(module.create_backend))
    config = store_config(store, tmp_path)
    with pytest.raises(OSError, match="disk full"):
        build_store(config, documents(4), EMBEDDER)
    monkeypatch.undo()
    with pytest.raises(CollectionNotFoundError):
        open_store(config, EMBEDDER)


def test_a_record_without_text_names_the_field(tmp_path):
    config = store_config("qdrant", tmp_path)
    build_store(config, documents(3), EMBEDDER).close()
    with pytest.raises(StoreError, match="has no text .*set text_field"):
        open_store(store_config("qdrant", tmp_path, text_field="body"), EMBEDDER)
    with pytest.raises(StoreError, match="vector_field: .* has one unnamed vector, not 'dense'"):
        open_store(store_config("qdrant", tmp_path, vector_field="dense"), EMBEDDER)

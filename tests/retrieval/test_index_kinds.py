"""DocumentIndex kinds: IVF (and its fallback to flat when too small) and HNSW, each saved and loaded."""

from __future__ import annotations

import random

from hash_embedder import HashEmbedder
from index_helpers import filled_index, results

from specdraft.retrieval.index import DocumentIndex, IndexConfig


def many_docs(n: int) -> list[dict]:
    rng = random.Random(0)
    vocabulary = [f"word{i}" for i in range(400)]
    return [{"id": f"d{i}", "text": " ".join(rng.choices(vocabulary, k=12)) + "."} for i in range(n)]


def test_ivf_trains_on_the_first_batch(tmp_path):
    docs = many_docs(200)
    index = DocumentIndex.create(IndexConfig(kind="ivf", nlist=4, nprobe=4), HashEmbedder())
    index.add(docs)
    assert index.kind == "ivf" and index.notes == ()
    for doc in docs[:20]:
        assert index.search(doc["text"], k=1)[0].chunk.doc_id == doc["id"]
    index.add([{"id": "late", "text": "completely different words arrive later"}])
    assert index.search("different words arrive", k=1)[0].chunk.doc_id == "late"
    index.save(tmp_path / "ivf")
    loaded = DocumentIndex.load(tmp_path / "ivf", HashEmbedder())
    assert loaded.kind == "ivf" and results(loaded, docs[5]["text"]) == results(index, docs[5]["text"])


def test_ivf_with_too_few_vectors_falls_back_to_flat_with_a_note(tmp_path):
    index = filled_index(kind="ivf", nlist=64)
    assert index.kind == "flat"
    assert len(index.notes) == 1 and "at least 2496 chunks" in index.notes[0] and "got 3" in index.notes[0]
    index.save(tmp_path / "ix")
    loaded = DocumentIndex.load(tmp_path / "ix", HashEmbedder())
    assert loaded.kind == "flat" and loaded.notes == index.notes and loaded.config.kind == "ivf"


def test_hnsw(tmp_path):
    docs = many_docs(300)
    index = DocumentIndex.create(IndexConfig(kind="hnsw", hnsw_m=16), HashEmbedder())
    index.add(docs)
    assert index.kind == "hnsw"
    for doc in docs[:20]:
        assert index.search(doc["text"], k=1)[0].chunk.doc_id == doc["id"]
    index.save(tmp_path / "hnsw")
    loaded = DocumentIndex.load(tmp_path / "hnsw", HashEmbedder())
    assert loaded.kind == "hnsw" and results(loaded, docs[7]["text"]) == results(index, docs[7]["text"])

"""DocumentIndex persistence: save/load round trips, refused embedders, corrupt and missing indexes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hash_embedder import HashEmbedder
from index_helpers import DOCS, filled_index, make_index, results

from specdraft.retrieval.index import CorruptIndexError, DocumentIndex, IndexNotFoundError, InvalidDocumentError


def test_save_load_round_trip(tmp_path):
    index = filled_index(chunk_words=5, chunk_overlap=1)
    path = index.save(tmp_path / "ix")
    assert sorted(p.name for p in path.iterdir()) == ["chunks.jsonl", "index.faiss", "manifest.json"]
    loaded = DocumentIndex.load(tmp_path / "ix", HashEmbedder())
    assert (len(loaded), loaded.documents, loaded.kind, loaded.config) == (
        len(index),
        index.documents,
        index.kind,
        index.config,
    )
    for query in ["cat purrs", "borrow checker", "tea minutes", "nothing matches here"]:
        assert results(loaded, query) == results(index, query)
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["format_version"] == 1
    assert manifest["embedder"] == {"name": "hash-bow-256", "model": None, "dim": 256}
    assert manifest["counts"] == {"documents": 3, "chunks": len(index)}
    assert manifest["config"]["chunk_words"] == 5 and "use_gpu" not in manifest["config"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ix"]  # no temporary or aside folder left


def test_incremental_add_after_load(tmp_path):
    filled_index().save(tmp_path / "ix")
    index = DocumentIndex.load(tmp_path / "ix", HashEmbedder())
    with pytest.raises(InvalidDocumentError, match="already in the index"):
        index.add([{"id": "tea", "text": "more tea"}])
    assert index.add([{"id": "owls", "text": "Owls hunt at night and see in the dark."}]) == 1
    index.save(tmp_path / "ix")
    again = DocumentIndex.load(tmp_path / "ix", HashEmbedder())
    assert (len(again), again.documents) == (4, 4)
    assert again.search("owls hunt at night", k=1)[0].chunk.id == "owls#0"
    assert results(again, "cat") == results(index, "cat")


def test_an_empty_index_round_trips(tmp_path):
    make_index(kind="hnsw").save(tmp_path / "empty")
    loaded = DocumentIndex.load(tmp_path / "empty", HashEmbedder())
    assert len(loaded) == 0 and loaded.kind is None and loaded.search("x", 3) == []
    loaded.add(DOCS)
    assert loaded.kind == "hnsw" and loaded.search("cat purrs", k=1)[0].chunk.doc_id == "cats"


def test_loading_with_another_embedder_is_refused(tmp_path):
    filled_index().save(tmp_path / "ix")
    with pytest.raises(ValueError, match=r"built with hash-bow-256, not other-model"):
        DocumentIndex.load(tmp_path / "ix", HashEmbedder(name="other-model"))


def test_loading_an_index_of_a_custom_embedder_needs_it(tmp_path):
    filled_index().save(tmp_path / "ix")
    with pytest.raises(ValueError, match="custom embedder 'hash-bow-256': pass it to load"):
        DocumentIndex.load(tmp_path / "ix")


def _edit_manifest(path: Path, **changes) -> None:
    manifest = json.loads((path / "manifest.json").read_text())
    manifest.update(changes)
    (path / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    "corrupt, message",
    [
        (lambda p: (p / "manifest.json").write_text("{not json"), "manifest.json is not valid JSON"),
        (lambda p: (p / "manifest.json").unlink(), "is not a specdraft document index"),
        (lambda p: _edit_manifest(p, format="something-else"), "is not a specdraft document index"),
        (lambda p: _edit_manifest(p, format_version=99), "format version 99 is not supported"),
        (lambda p: _edit_manifest(p, counts=None), "missing fields"),
        (lambda p: _edit_manifest(p, config={"kind": "annoy"}), "bad configuration"),
        (lambda p: _edit_manifest(p, counts={"documents": 3, "chunks": 99}), "the manifest says 99 chunks"),
        (lambda p: (p / "chunks.jsonl").write_text("{}\n"), "chunks.jsonl does not match its checksum"),
        (lambda p: (p / "index.faiss").write_bytes(b"\0" * 10), "index.faiss does not match its checksum"),
        (lambda p: (p / "index.faiss").unlink(), "index.faiss is missing"),
    ],
)
def test_a_corrupt_index_is_reported(tmp_path, corrupt, message):
    path = filled_index().save(tmp_path / "ix")
    corrupt(path)
    with pytest.raises(CorruptIndexError, match=message):
        DocumentIndex.load(path, HashEmbedder())


def test_a_missing_index_is_reported(tmp_path):
    with pytest.raises(IndexNotFoundError, match="no document index at"):
        DocumentIndex.load(tmp_path / "nothing", HashEmbedder())
    with pytest.raises(IndexNotFoundError):
        DocumentIndex.load(tmp_path / "no" / "parent", HashEmbedder())


def test_save_never_replaces_a_folder_that_is_not_an_index(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("precious")
    with pytest.raises(ValueError, match="not a document index: not replacing it"):
        filled_index().save(tmp_path / "mine")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "precious"
    (tmp_path / "empty").mkdir()
    filled_index().save(tmp_path / "empty")  # an empty folder is fine
    assert len(DocumentIndex.load(tmp_path / "empty", HashEmbedder())) == 3

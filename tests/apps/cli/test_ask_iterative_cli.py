"""`specdraft ask --iterative` through `specdraft.apps.cli.main`: a real MiniLM index on disk, a tiny
checkpoint; speculative retrieval gives the same answer and chunks as plain iterative RAG."""

from __future__ import annotations

import json

import pytest
from cli_helpers import ask, saved_index

DOCS = [
    {"id": "fox", "text": "The quick brown fox jumps over the lazy dog. The fox says juec dogithb to everyone."},
    {"id": "tea", "text": "Green tea is steeped in hot water for two minutes."},
    {"id": "rain", "text": "Rain falls on the hills in spring and the rivers rise."},
    {"id": "moon", "text": "The moon circles the earth every twenty-seven days."},
]


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    return saved_index(tmp_path_factory.mktemp("ask-iterative") / "index", DOCS)


def ask_json(capsys, checkpoint, index_dir, *args: str) -> dict:
    code, out, err = ask(
        capsys,
        "--json",
        "--model",
        str(checkpoint),
        "--index",
        str(index_dir),
        "--max-new-tokens",
        "16",
        "--iterative",
        *args,
    )
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("retriever", ["dense", "hnsw", "bm25"])
def test_speculative_retrieval_gives_the_plain_answer_and_chunks(capsys, tiny_checkpoint, index_dir, retriever):
    path, _ = tiny_checkpoint
    plain = ask_json(capsys, path, index_dir, "--retriever", retriever, "What does the fox say?")
    fast = ask_json(
        capsys, path, index_dir, "--retriever", retriever, "--speculative-retrieval", "What does the fox say?"
    )
    assert plain["retriever"] == fast["retriever"] == retriever
    assert plain["speculative_retrieval"] is False and fast["speculative_retrieval"] is True
    assert fast["token_ids"] == plain["token_ids"] and fast["answer"] == plain["answer"]
    assert [r["docs"] for r in fast["retrievals"]] == [r["docs"] for r in plain["retrievals"]]
    assert len(plain["retrievals"]) >= 4  # 16 tokens, a retrieval every 4
    assert all(r["source"] == "retriever" and r["status"] == "exact" for r in plain["retrievals"])
    assert {r["doc_ids"][0] for r in plain["retrievals"]} <= {f"{d['id']}#0" for d in DOCS}


def test_text_output_lists_the_retrievals(capsys, tiny_checkpoint, index_dir):
    path, _ = tiny_checkpoint
    code, out, err = ask(
        capsys,
        "--model",
        str(path),
        "--index",
        str(index_dir),
        "--max-new-tokens",
        "8",
        "--iterative",
        "--speculative-retrieval",
        "fox?",
    )
    assert code == 0, err
    assert "Retrievals:" in out and "stride 0: [" in out
    assert "retrievals (dense" in err and "cache hits" in err


def test_retriever_options_need_iterative(capsys, tiny_checkpoint, index_dir):
    path, _ = tiny_checkpoint
    for extra in (["--retriever", "bm25"], ["--speculative-retrieval"]):
        code, _, err = ask(capsys, "--model", str(path), "--index", str(index_dir), *extra, "fox?")
        assert code == 2 and "need --iterative" in err


def test_json_stats_use_the_core_names(capsys, tiny_checkpoint, index_dir):
    """``ask --iterative --json`` says ``wall_s`` as ``ask`` and ``correct`` do, and only the core's names."""
    path, _ = tiny_checkpoint
    stats = ask_json(capsys, path, index_dir, "What does the fox say?")["stats"]
    for new, old in (
        ("wall_s", "wall_seconds"),
        ("retrieval_s", "retrieval_seconds"),
        ("generation_s", "generation_seconds"),
        ("retrieval_wait_s", "retrieval_wait_seconds"),
        ("cache_s", "cache_seconds"),
        ("target_forward_passes", "model_passes"),
    ):
        assert new in stats and old not in stats, new

"""`--backend llama-cpp` everywhere a model is: correct, ask, serve (chat, grammar, RAG), bench."""

from __future__ import annotations

import json

import pytest
from hash_embedder import HashEmbedder

from specdraft import ModelConfig
from specdraft.apps.cli import main
from specdraft.apps.service import ServiceConfig, create_app
from specdraft.retrieval.index import DocumentIndex

pytestmark = pytest.mark.slow

DOCS = [
    {
        "id": "eiffel",
        "text": "The Eiffel Tower is 330 metres tall. It was built in 1889 for the World's Fair in Paris.",
    },
    {"id": "tea", "text": "Green tea is steeped in hot water for two minutes."},
]


def run(capsys, *argv: str) -> dict:
    code = main(list(argv))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def test_correct_on_llama_cpp_equals_plain(capsys):
    # Two sentences: the first request of a process now drafts from the pass costs the load probe
    # measured, so an answer made only of edits (every early copy refused) rightly decodes plainly;
    # the error-free second sentence is where copying pays and must be drafted and accepted.
    text = (
        "She go to school every days and she like it. The weather was nice, and the children played "
        "outside in the garden until the sun went down behind the hills."
    )
    fast = run(capsys, "correct", "--backend", "llama-cpp", "--json", text)
    plain = run(capsys, "correct", "--backend", "llama-cpp", "--json", "--no-speculation", text)
    assert fast["token_ids"] == plain["token_ids"] and fast["corrected"] == plain["corrected"]
    assert fast["stats"]["accepted_tokens"] > 0 and fast["stats"]["exact"] is True


def test_ask_on_llama_cpp_equals_plain(capsys, tmp_path):
    index = DocumentIndex.create()
    index.add(DOCS)
    index.save(tmp_path / "index")
    args = ["ask", "--backend", "llama-cpp", "--index", str(tmp_path / "index"), "--max-new-tokens", "24", "--json"]
    reference = run(capsys, *args, "--drafter", "reference", "How tall is the Eiffel Tower?")
    plain = run(capsys, *args, "--drafter", "none", "How tall is the Eiffel Tower?")
    assert reference["token_ids"] == plain["token_ids"] and reference["passages"][0]["document"] == "eiffel"


def test_iterative_ask_on_llama_cpp_speculative_equals_plain(capsys, tmp_path):
    """``ask --iterative --backend llama-cpp``: speculative retrieval gives plain iterative RAG's answer
    and the same chunk at every stride, on the GGUF model as it is."""
    index = DocumentIndex.create()
    index.add(DOCS)
    index.save(tmp_path / "index")
    args = [
        "ask",
        "--backend",
        "llama-cpp",
        "--index",
        str(tmp_path / "index"),
        "--max-new-tokens",
        "16",
        "--json",
        "--iterative",
    ]
    plain = run(capsys, *args, "How tall is the Eiffel Tower?")
    speculative = run(capsys, *args, "--speculative-retrieval", "How tall is the Eiffel Tower?")
    assert plain["token_ids"] and speculative["token_ids"] == plain["token_ids"]
    assert [r["doc_ids"] for r in speculative["retrievals"]] == [r["doc_ids"] for r in plain["retrievals"]]
    assert len(plain["retrievals"]) >= 2


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    config = ServiceConfig(
        model=ModelConfig("smollm2-135m", backend="llama-cpp"), index_root=str(tmp_path_factory.mktemp("indexes"))
    )
    return create_app(config, embedder=HashEmbedder()).test_client()


def test_service_answers_on_llama_cpp(client):
    body = {"messages": [{"role": "user", "content": "Repeat: the cat sat on the mat."}], "max_tokens": 16}
    plain = client.post("/v1/chat/completions", json={**body, "drafter": "none"}).get_json()
    drafted = client.post("/v1/chat/completions", json={**body, "drafter": "prompt-lookup"}).get_json()
    assert drafted["choices"][0]["message"]["content"] == plain["choices"][0]["message"]["content"]
    assert drafted["speculation"]["exact"] is True
    grammar = client.post("/v1/grammar/correct", json={"text": "She go to school.", "compare": True}).get_json()
    assert grammar["comparison"]["identical"] is True
    added = client.post("/v1/rag/documents", json={"documents": DOCS})
    assert added.status_code == 200
    answer = client.post(
        "/v1/rag/query", json={"question": "How tall is the Eiffel Tower?", "max_tokens": 16}
    ).get_json()
    assert answer["passages"] and answer["token_ids"]


def test_bench_runs_llama_cpp_python_as_the_peer(tmp_path):
    from specdraft.apps.bench.llama_peers import LlamaCppPeer
    from specdraft.apps.bench.methods import BenchCase, plain
    from specdraft.apps.bench.runner import run_benchmark
    from specdraft.apps.model_pool import ModelPool

    model = ModelPool(ModelConfig(backend="llama-cpp")).get("smollm2-135m")
    case = BenchCase(
        "c0", tuple(model.encode_chat([{"role": "user", "content": "Repeat: the cat sat on the mat."}])), 16
    )
    peer = LlamaCppPeer("llama-cpp-python:plain", model.file.path, model.max_length, model.threads)
    result = run_benchmark("probe", model.name, [plain(model), peer], [case])
    assert [s.method for s in result.summaries] == ["plain", "llama-cpp-python:plain"]
    assert all(m.token_ids for m in result.measurements)

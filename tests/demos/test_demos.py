"""Every script of ``demos/`` run as a user runs it (a subprocess), against a live server on loopback
(the tiny service app on waitress, with an API key) or, for the Python RAG pipeline, on a tiny
checkpoint. Their output is checked against the server's own answers."""

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from live_server import LiveServer
from tiny_service import GRAMMAR_TEXT, make_app, make_chat_model

DEMOS = Path(__file__).resolve().parents[2] / "demos"
KEY = "demo-test-key-0123456789abcdef"


@pytest.fixture(scope="module")
def server(tokenizer, tmp_path_factory):
    keys = tmp_path_factory.mktemp("keys") / "keys"
    keys.write_text(f"{KEY} read\n")
    with LiveServer(make_app(make_chat_model(tokenizer), api_key_file=str(keys))) as live:
        yield live


def run_demo(name, *args, timeout=300):
    done = subprocess.run([sys.executable, str(DEMOS / name), *args], capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr
    return done.stdout


def post(server, path, body):
    request = urllib.request.Request(
        server.url + path,
        json.dumps(body).encode(),
        {"Content-Type": "application/json", "Authorization": f"Bearer {KEY}"},
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.load(response)


def metric(server, name, **labels):
    """The sum of the samples of ``name`` (from ``GET /metrics``) that carry ``labels``."""
    request = urllib.request.Request(server.url + "/metrics", headers={"Authorization": f"Bearer {KEY}"})
    text = urllib.request.urlopen(request, timeout=30).read().decode()
    wanted = [f'{key}="{value}"' for key, value in labels.items()]
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(name + "{") and all(w in line for w in wanted)
    )


@pytest.mark.parametrize(
    "name",
    ["grammar_client.py", "langchain_rag.py", "langchain_chroma_rag.py", "python_rag.py", "predicted_outputs.py"],
)
def test_every_demo_says_how_to_run_it_against_start_sh(name):
    source = (DEMOS / name).read_text()
    assert source.startswith('"""') and "./start.sh" in source
    assert run_demo(name, "--help").startswith("usage: ")  # without a server
    if name != "python_rag.py":
        assert "--url" in source and "--key" in source


def test_grammar_client_prints_the_servers_correction(server):
    out = run_demo("grammar_client.py", GRAMMAR_TEXT, "--url", server.url, "--key", KEY, "--compare")
    expected = post(server, "/v1/grammar/correct", {"text": GRAMMAR_TEXT})
    assert f"corrected: {expected['corrected']}\n" in out
    assert f"original:  {GRAMMAR_TEXT}\n" in out
    assert "identical: True" in out and "model passes" in out


def test_grammar_client_without_the_key_says_why_and_exits_1(server):
    env = {name: value for name, value in os.environ.items() if name != "SPECDRAFT_API_KEY"}
    done = subprocess.run(
        [sys.executable, str(DEMOS / "grammar_client.py"), "--url", server.url],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 1 and "HTTP 401" in done.stderr and "API key" in done.stderr


def test_langchain_rag_chain_drafts_from_its_documents_and_answers_as_plain_decoding(server):
    before = metric(server, "specdraft_generations_total", drafter="documents")
    out = run_demo(
        "langchain_rag.py", "How long do refunds take?", "--url", server.url, "--key", KEY, "--max-tokens", "24"
    )
    assert out.startswith("question: How long do refunds take?\nanswer: ")
    assert "identical: True" in out
    assert metric(server, "specdraft_generations_total", drafter="documents") == before + 1  # the documents drafter ran
    assert metric(server, "specdraft_generations_total", drafter="none") >= 1


def test_langchain_chain_over_chroma_drafts_from_its_documents_and_answers_as_plain_decoding(server, tmp_path):
    before = metric(server, "specdraft_generations_total", drafter="documents")
    chroma = str(tmp_path / "chroma")
    args = ("How long do refunds take?", "--url", server.url, "--key", KEY, "--max-tokens", "24", "--chroma", chroma)
    out = run_demo("langchain_chroma_rag.py", *args)
    assert out.startswith("question: How long do refunds take?\nretrieved: refunds, ")
    assert "identical: True" in out and "specdraft's Chroma adapter retrieves the same documents: True" in out
    assert metric(server, "specdraft_generations_total", drafter="documents") == before + 1


def test_predicted_outputs_give_the_plain_answer_and_count_the_prediction(server):
    out = run_demo("predicted_outputs.py", "--url", server.url, "--key", KEY, "--max-tokens", "24")
    assert "prediction tokens accepted: " in out and "rejected: " in out
    assert "identical: True" in out
    assert metric(server, "specdraft_generations_total", drafter="prediction") >= 1


def test_python_rag_pipeline_answers_with_sources_as_plain_decoding(tiny_checkpoint):
    path, _ = tiny_checkpoint
    out = run_demo("python_rag.py", "How tall is the Eiffel Tower?", "--model", str(path), "--max-tokens", "16")
    assert out.startswith("question: How tall is the Eiffel Tower?\nanswer: ")
    assert "sources: eiffel#0 (travel-guide)" in out  # the best passage first
    assert "reference drafter: " in out and "identical: True" in out
